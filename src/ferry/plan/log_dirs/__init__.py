"""The log dirs inside each broker (JBOD): which dir every replica goes into, for three jobs on a
snapshot that lists every broker's dirs and every replica's dir: even out the bytes across the
dirs of each broker (``balance``), empty one dir (``evacuate``), and give the new replicas of an
inter-broker plan a dir (``choose``); ``loads`` holds the bytes per dir they move, ``figures``
what the report shows."""

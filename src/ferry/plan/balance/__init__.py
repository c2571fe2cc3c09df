"""Once for all topics: which brokers take each topic's extras and which replicas stay, as one
integer program whose optimum is the planner's lower bound on moves. :mod:`.assign_extras` runs the
ladder of settings from strict to loose; :mod:`.program` holds the program (its state, rows and
columns, pools); :mod:`.solvers` solves it (min-cost flow where it is a network, HiGHS part by part
otherwise); :mod:`.repair` makes the optimum hold partition by partition where the program relaxed
the rack rule, and solves the whole plan exactly on small inputs the passes fall short on. The
bands, rack totals and least spread are the targets the program holds brokers and racks to."""

"""The top floor: what a user runs. cli parses the command line; certify runs a certification through funnel
(the one path from a connection to case results, which the pytest plugin shares); explain, matrix, selftest,
coverage and transcript are the other commands."""

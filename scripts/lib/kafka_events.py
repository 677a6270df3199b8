"""Writes EVENTS records of KEYS Zipf-skewed keys (a few keys are hot) to PATH for
`kcat -P -K '\t' -l PATH`: one "KEY<TAB>{"uid":"KEY","ts":TS}" line each, the event time growing
by 0..MAX_STEP_MS per record from 1700000000000 (so each partition, keyed by user, is in
event-time order). Used by scripts/demo.sh --kafka and scripts/bench-kafka.sh.

    python3 scripts/lib/kafka_events.py EVENTS KEYS PATH MAX_STEP_MS
"""
import random
import sys

events, keys, path, max_step = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = random.Random(42)
weights = [1.0 / (k + 1) for k in range(keys)]
ts = 1_700_000_000_000
with open(path, "w") as f:
    for key in rng.choices(range(keys), weights=weights, k=events):
        ts += rng.randint(0, max_step)
        f.write(f'key-{key}\t{{"uid":"key-{key}","ts":{ts}}}\n')

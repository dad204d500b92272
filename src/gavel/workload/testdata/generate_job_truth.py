# Independent truth for generator_test.cc: the original's utils.generate_job (Gavel commit
# c4fa400, transcribed line for line) and Scheduler._sample_arrival_time_delta, run by
# CPython's own random module, with multi-GPU jobs, multi-priority jobs and SLOs all on.
# Usage (from the repository root):
#   python3 src/gavel/workload/testdata/generate_job_truth.py SEED LAM COUNT [FIXED_DURATION]
# Prints one job per line: model, scale factor, duration, total steps, priority, SLO, arrival.
import json, math, random, re, sys
T = json.load(open('data/simulation_throughputs.json'))['v100']
models = ['ResNet-18 (batch size %d)' % b for b in (16, 32, 64, 128, 256)] + \
         ['ResNet-50 (batch size %d)' % b for b in (16, 32, 64, 128)] + \
         ['Transformer (batch size %d)' % b for b in (16, 32, 64, 128, 256)] + \
         ['LM (batch size %d)' % b for b in (5, 10, 20, 40, 80)] + \
         ['Recommendation (batch size %d)' % b for b in (512, 1024, 2048, 4096, 8192)] + ['A3C', 'CycleGAN']
dist = lambda i: i < 19
def gen(rng, slo_rng, multi_gpu, multi_prio, fixed=None):
    r = rng.uniform(0, 1)
    sf = 2 if 0.7 <= r <= 0.8 else 4 if 0.8 <= r <= 0.95 else 8 if 0.95 <= r else 1
    if fixed: d = fixed
    elif rng.random() >= 0.8: d = 60 * (10 ** rng.uniform(3, 4))
    else: d = 60 * (10 ** rng.uniform(1.5, 3))
    if not multi_gpu: sf = 1
    while True:
        i = rng.choice(range(26))
        if sf == 1 or dist(i): break
    p = 1.0
    if multi_prio:
        if 0.0 <= rng.uniform(0, 1) <= 0.2: p = 5.0
    slo = None
    if slo_rng is not None:
        r = slo_rng.uniform(0, 1); slo = 1.2 if r < 0.33 else 2.0 if r < 0.67 else 10.0
    return models[i], sf, d, d * T["('%s', %d)" % (models[i], sf)]['null'], p, slo
seed, lam, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
fixed = float(sys.argv[4]) if len(sys.argv) > 4 else None
rng, ia, slo_rng = random.Random(seed + 2), random.Random(seed + 3), random.Random(seed + 6)
t = 0
for _ in range(n):
    m, sf, d, steps, p, slo = gen(rng, slo_rng, True, True, fixed)
    print(repr(m), sf, repr(d), repr(steps), p, slo, repr(t))
    t = -math.log(1.0 - ia.random()) / (1.0 / lam) + t if lam else 0.0

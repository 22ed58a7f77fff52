#!/usr/bin/python3
"""The Optuna side of tests/bench/sweep_vs_optuna: Optuna's TPESampler and SuccessiveHalvingPruner over the same
space, budget and model as the TrainDeck sweep, training in PyTorch what the built-in trainer trains.

    sweep_vs_optuna_peer.py [--trials 40] [--epochs 9] [--limit 20000] [--val-fraction 0.1] [--seed 1]
                            [--jobs 2] [--min-resource 1] [--reduction-factor 3]

The same as the trainer (backend/engine: trainer.cpp, dataset.cpp, network.cpp, optimizer.cpp, jobspec.h):
  - data: the first --limit images of Fashion-MNIST's training file; the validation split is the same images the
    trainer takes (its Fisher-Yates shuffle with xoshiro256** seeded by seed ^ 0x5eed, replayed here bit for bit),
    the test set is all of t10k; pixels / 255 standardised with the training split's mean and deviation;
  - model: flatten -> linear(784, W) -> relu -> linear(W, 10), every weight and bias uniform in
    +-1/sqrt(fan_in) (the trainer's initialisation, and PyTorch's default bounds);
  - SGD with momentum 0.9 (the trainer's default), weight decay added to the gradient of the weights only (the
    trainer decays no bias), a constant learning rate, the mean cross-entropy of each batch, a new shuffle each
    epoch with the last partial batch kept, the validation accuracy after each epoch, the test accuracy after the
    last one;
  - the space: optimizer.lr loguniform 1e-4..0.3, hidden width 64/128/256/512, weight decay loguniform 1e-6..1e-2,
    batch size 64/128/256; up to --epochs epochs a trial.
Optuna: TPESampler(seed) with its defaults (10 random start-up trials, 24 candidates, the prior, the magic clip, as
backend/sweep/suggester.cpp follows them), SuccessiveHalvingPruner(min_resource, reduction_factor,
min_early_stopping_rate=0): rungs at 1, 3, 9 epochs for the defaults. The pruner is asked after every epoch but the
last (a trial that trained all its epochs is complete, as TrainDeck's last rung is), and a trial's value is its best
validation accuracy (TrainDeck's objective, "best" of its trial). Two trials at a time are study.optimize's
n_jobs=2: two threads in one process, each trial's PyTorch on one thread (torch.set_num_threads(1), as each
TrainDeck trial gets one CPU and --threads 1); each trial seeds its own generator with --seed for its initial
weights and shuffles, as every TrainDeck trial's trainer gets the sweep's seed.

Prints progress on stderr and one JSON line on stdout: the trials (number, params, state, epochs, val accuracies,
test accuracy), total epochs, wall seconds, versions. Run with Debian's /usr/bin/python3 (python3-torch,
python3-optuna).
"""
import argparse
import gzip
import json
import math
import sys
import threading
import time

import numpy as np
import optuna
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"
MASK = (1 << 64) - 1


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


class Xoshiro:
    """backend/engine/rng.h's Rng: xoshiro256** seeded through splitmix64, and its below()."""

    def __init__(self, seed):
        self.s = []
        for _ in range(4):
            seed = (seed + 0x9E3779B97F4A7C15) & MASK
            z = seed
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK

    def next(self):
        s = self.s
        result = (self.rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self.rotl(s[3], 45)
        return result

    def below(self, bound):
        return (self.next() * bound) >> 64


def load_data(limit, val_fraction, seed):
    """The trainer's load_training_data: the first `limit` images, split_validation, fit/apply_normalization."""
    x = read_idx(f"{DATA}/train-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) * np.float32(1 / 255)
    y = read_idx(f"{DATA}/train-labels-idx1-ubyte.gz").astype(np.int64)
    tx = read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) * np.float32(1 / 255)
    ty = read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz").astype(np.int64)
    if 0 < limit < len(x):
        x, y = x[:limit], y[:limit]
    n = len(x)
    val_count = int(math.floor(n * val_fraction))
    order = list(range(n))
    rng = Xoshiro(seed ^ 0x5EED)
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    train_index, val_index = np.array(order[:n - val_count]), np.array(order[n - val_count:])
    vx, vy, x, y = x[val_index], y[val_index], x[train_index], y[train_index]
    mean = np.float32(x.astype(np.float64).mean())
    inverse_std = np.float32(1.0 / math.sqrt(max(0.0, (x.astype(np.float64) ** 2).mean() - float(mean) ** 2)))
    tensor = lambda a: torch.from_numpy(np.ascontiguousarray((a - mean) * inverse_std, dtype=np.float32))
    return (tensor(x), torch.from_numpy(y)), (tensor(vx), torch.from_numpy(vy)), (tensor(tx), torch.from_numpy(ty))


def accuracy(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            correct += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
    model.train()
    return correct / len(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=9)
    parser.add_argument("--limit", type=int, default=20000)
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--min-resource", type=int, default=1)
    parser.add_argument("--reduction-factor", type=int, default=3)
    args = parser.parse_args()

    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    train, val, test = load_data(args.limit, args.val_fraction, args.seed)
    train_count = len(train[0])
    results = {}
    lock = threading.Lock()
    started = time.perf_counter()

    def objective(trial):
        torch.set_num_threads(1)  # per thread: OpenMP keeps the count per thread, and n_jobs runs trials on two
        lr = trial.suggest_float("optimizer.lr", 1e-4, 0.3, log=True)
        hidden = trial.suggest_categorical("hidden[0]", [64, 128, 256, 512])
        weight_decay = trial.suggest_float("optimizer.weight_decay", 1e-6, 1e-2, log=True)
        batch_size = trial.suggest_categorical("batch_size", [64, 128, 256])
        generator = torch.Generator().manual_seed(args.seed)
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))
        with torch.no_grad():
            for layer in (model[1], model[3]):
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=generator)
                layer.bias.uniform_(-bound, bound, generator=generator)
        weights = [model[1].weight, model[3].weight]
        biases = [model[1].bias, model[3].bias]
        optimizer = torch.optim.SGD([{"params": weights, "weight_decay": weight_decay},
                                     {"params": biases, "weight_decay": 0.0}], lr=lr, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        record = {"trial": trial.number + 1, "params": dict(trial.params), "val": [], "state": "running",
                  "torch_threads": torch.get_num_threads()}
        with lock:
            results[trial.number] = record
        best = -math.inf
        steps_per_epoch = math.ceil(train_count / batch_size)
        for epoch in range(1, args.epochs + 1):
            order = torch.randperm(train_count, generator=generator)
            for step, first in enumerate(range(0, train_count, batch_size), 1):
                index = order[first:first + batch_size]
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(model(train[0][index]), train[1][index])
                loss.backward()
                optimizer.step()
                if not math.isfinite(loss.item()):
                    # The trainer stops at the step whose loss is not finite (its job fails), and so does this
                    # trial: a NaN value makes it a failed trial, which TPE leaves out.
                    record["state"] = "failed"
                    record["epochs"] = epoch - 1 + step / steps_per_epoch
                    print(f"trial {trial.number + 1}: loss not finite at epoch {epoch}", file=sys.stderr, flush=True)
                    return math.nan
            value = accuracy(model, *val)
            record["val"].append(value)
            record["epochs"] = epoch
            best = max(best, value)
            trial.report(value, epoch)
            if epoch < args.epochs and trial.should_prune():
                record["state"] = "pruned"
                print(f"trial {trial.number + 1}: pruned after epoch {epoch} (val {value:.4f})", file=sys.stderr,
                      flush=True)
                raise optuna.TrialPruned()
        record["test"] = accuracy(model, *test)
        record["state"] = "completed"
        print(f"trial {trial.number + 1}: completed, best val {best:.4f}, test {record['test']:.4f}",
              file=sys.stderr, flush=True)
        return best

    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=args.seed),
        pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=args.min_resource,
                                                      reduction_factor=args.reduction_factor,
                                                      min_early_stopping_rate=0))
    study.optimize(objective, n_trials=args.trials, n_jobs=args.jobs)
    wall = time.perf_counter() - started
    trials = [results[number] for number in sorted(results)]
    print(json.dumps({"type": "result", "trials": trials, "epochs": sum(t.get("epochs", 0) for t in trials),
                      "wall_seconds": wall, "train_samples": train_count, "val_samples": len(val[0]),
                      "test_samples": len(test[0]), "optuna": optuna.__version__, "torch": torch.__version__,
                      "torch_threads": torch.get_num_threads(), "n_jobs": args.jobs}), flush=True)


if __name__ == "__main__":
    sys.exit(main())

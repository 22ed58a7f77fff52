#!/usr/bin/python3
"""The PyTorch side of tests/bench/engine_vs_pytorch: the same model, data, split, normalisation,
optimiser and schedule as the TrainDeck spec, timed the same way (training steps only).

Prints one JSON object per line: {"type":"window","samples_per_s":...} every 10 steps,
{"type":"epoch",...} per epoch and {"type":"result",...} at the end.
Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import gzip
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def model_for(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def evaluate(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            correct += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
    model.train()
    return correct / len(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["mlp", "cnn"], required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x = read_idx(f"{DATA}/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    y = read_idx(f"{DATA}/train-labels-idx1-ubyte.gz").astype(np.int64)
    tx = read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    ty = read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz").astype(np.int64)
    order = np.random.default_rng(args.seed).permutation(len(x))
    train_count = len(x) - int(len(x) * args.val_fraction)
    x, y = x[order[:train_count]], y[order[:train_count]]
    mean, std = x.mean(), x.std()
    x = torch.from_numpy((x - mean) / std).unsqueeze(1)
    tx = torch.from_numpy((tx - mean) / std).unsqueeze(1)
    y, ty = torch.from_numpy(y), torch.from_numpy(ty)

    model = model_for(args.model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    steps_per_epoch = math.ceil(train_count / args.batch_size)
    total = steps_per_epoch * args.epochs
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * min(1.0, (s + 1) / total))))
    loss_fn = nn.CrossEntropyLoss()

    train_seconds = 0.0
    step = 0
    window_samples, window_seconds = 0, 0.0
    for epoch in range(args.epochs):
        perm = torch.randperm(train_count)
        epoch_seconds = 0.0
        for first in range(0, train_count, args.batch_size):
            idx = perm[first:first + args.batch_size]
            start = time.perf_counter()
            xb, yb = x[idx], y[idx]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            schedule.step()
            elapsed = time.perf_counter() - start
            epoch_seconds += elapsed
            window_samples += len(idx)
            window_seconds += elapsed
            step += 1
            if step % 10 == 0:
                print(json.dumps({"type": "window", "step": step, "samples_per_s": window_samples / window_seconds}),
                      flush=True)
                window_samples, window_seconds = 0, 0.0
        train_seconds += epoch_seconds
        print(json.dumps({"type": "epoch", "epoch": epoch + 1, "samples_per_s": train_count / epoch_seconds,
                          "loss": loss.item()}), flush=True)
    print(json.dumps({"type": "result", "samples_per_s": train_count * args.epochs / train_seconds,
                      "test_accuracy": evaluate(model, tx, ty), "torch": torch.__version__,
                      "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    sys.exit(main())

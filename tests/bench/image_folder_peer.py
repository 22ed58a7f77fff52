#!/usr/bin/python3
"""The PyTorch side of tests/bench/image_folder_vs_torchvision: torchvision's ImageFolder and a DataLoader with
worker processes decode, augment (RandomCrop with padding, RandomHorizontalFlip) and batch the same PNG class
folders each epoch; the same CNN, optimiser, batch size and epochs as the TrainDeck spec.

Timed as a user waits: each epoch from its first batch request to its last step (decode, augment, train), the
first epoch including the loader's start. Prints one JSON object per line: {"type":"epoch",...} per epoch and
{"type":"result",...} at the end. Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision).
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
from torchvision import datasets, transforms


def cnn(channels, size):
    side = ((size - 2) // 2 - 2) // 2
    return nn.Sequential(nn.Conv2d(channels, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * side * side, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--channels", type=int, choices=[1, 3], required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--padding", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gray = [transforms.Grayscale(1)] if args.channels == 1 else []
    # Fashion-MNIST's statistics (the grey and the coloured sets are close enough for a fixed normalisation).
    normalize = transforms.Normalize([0.29] * args.channels, [0.35] * args.channels)
    train_set = datasets.ImageFolder(args.train, transforms.Compose(
        gray + [transforms.RandomCrop(args.size, padding=args.padding), transforms.RandomHorizontalFlip(),
                transforms.ToTensor(), normalize]))
    test_set = datasets.ImageFolder(args.test, transforms.Compose(gray + [transforms.ToTensor(), normalize]))
    train = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                        num_workers=args.workers, persistent_workers=args.workers > 0)
    test = torch.utils.data.DataLoader(test_set, batch_size=1000, num_workers=args.workers)

    model = cnn(args.channels, args.size)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        start = time.perf_counter()
        samples = 0
        for xb, yb in train:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            samples += len(yb)
        seconds = time.perf_counter() - start
        print(json.dumps({"type": "epoch", "epoch": epoch + 1, "samples": samples, "seconds": seconds,
                          "time": time.time(), "loss": loss.item()}), flush=True)

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for xb, yb in test:
            correct += (model(xb).argmax(1) == yb).sum().item()
            total += len(yb)
    print(json.dumps({"type": "result", "test_accuracy": correct / total, "test_samples": total,
                      "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    sys.exit(main())

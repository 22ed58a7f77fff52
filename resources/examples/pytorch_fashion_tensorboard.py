#!/usr/bin/python3
"""pytorch_fashion.py as a TensorBoard user writes it: an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist) that
logs with torch.utils.tensorboard's SummaryWriter, its one import line changed to TrainDeck's drop-in:

    -from torch.utils.tensorboard import SummaryWriter
    +from traindeck import SummaryWriter

Under a TrainDeck worker its scalars and hparams are the job's curves and config in the console; the histograms and
the image, which the metrics protocol has no record for, go to an event file under runs/ in the job's folder (its
path is in the job's log). Run by hand it writes runs/<date>_<host>_lr<lr>/ as torch's writer would:

    /usr/bin/python3 resources/examples/pytorch_fashion_tensorboard.py --epochs 2
"""
import argparse
import gzip
import os
import sys

import numpy as np
import torch
import torch.nn as nn

# An installed TrainDeck puts traindeck.py on Python's path; in the source tree it is resources/python.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from traindeck import SummaryWriter  # noqa: E402  (was: from torch.utils.tensorboard import SummaryWriter)

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N training images")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    x = read_idx(f"{DATA}/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    y = read_idx(f"{DATA}/train-labels-idx1-ubyte.gz").astype(np.int64)
    if args.limit:
        x, y = x[: args.limit], y[: args.limit]
    tx = read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    ty = read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz").astype(np.int64)
    x, tx = torch.from_numpy(x.reshape(len(x), -1)), torch.from_numpy(tx.reshape(len(tx), -1))
    y, ty = torch.from_numpy(y), torch.from_numpy(ty)

    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    writer = SummaryWriter(comment=f"_lr{args.lr}")
    writer.add_image("test image 0", tx[0].reshape(1, 28, 28), 0)
    step, accuracy = 0, 0.0
    batches = (len(x) + args.batch_size - 1) // args.batch_size
    for epoch in range(args.epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        for position in range(batches):
            idx = order[position * args.batch_size:(position + 1) * args.batch_size]
            optimizer.zero_grad()
            logits = model(x[idx])
            loss = loss_fn(logits, y[idx])
            loss.backward()
            optimizer.step()
            step += 1
            writer.add_scalar("Loss/train", loss.item(), step)
            writer.add_scalar("Accuracy/train", (logits.argmax(1) == y[idx]).float().mean(), step)
        with torch.no_grad():
            accuracy = (model(tx).argmax(1) == ty).float().mean().item()
        writer.add_scalar("Accuracy/test", accuracy, step)
        for name, parameter in model.named_parameters():
            writer.add_histogram(name, parameter, step)
        print(f"epoch {epoch + 1}/{args.epochs}  test accuracy {100 * accuracy:.2f}%", flush=True)
    writer.add_hparams({"lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs, "limit": args.limit},
                       {"hparam/test_accuracy": accuracy})
    writer.close()


if __name__ == "__main__":
    main()

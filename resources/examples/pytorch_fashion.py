#!/usr/bin/python3
"""A real PyTorch job for TrainDeck: an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist), reporting
through resources/python/traindeck.py, checkpointing atomically and resuming after preemption or a crash.

    /usr/bin/python3 resources/examples/pytorch_fashion.py --epochs 2
"""
import argparse
import gzip
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import traindeck  # noqa: E402

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
    checkpoint = os.path.join(traindeck.checkpoint_dir(), "pytorch_fashion.pt")
    step, epoch, position = 0, 0, 0
    if os.path.exists(checkpoint):
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, epoch, position = state["step"], state["epoch"], state["position"]
        print(f"resumed from {checkpoint} at step {step}", flush=True)

    def save():
        traindeck.save_atomically(checkpoint, lambda f: torch.save(
            {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "epoch": epoch,
             "position": position}, f))

    # The run's parameters: columns of the runs table, terms of its query, keys to group and compare by.
    traindeck.config({"model": "mlp-256-128", "optimizer": {"type": "sgd", "lr": args.lr, "momentum": 0.9},
                      "epochs": args.epochs, "batch_size": args.batch_size, "limit": args.limit, "seed": 0,
                      "framework": "pytorch " + torch.__version__})
    traindeck.status("running", resumed_from_step=step)
    batches = (len(x) + args.batch_size - 1) // args.batch_size
    while epoch < args.epochs:
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        while position < batches:
            if traindeck.preempted():
                save()
                traindeck.status("preempted", step=step)
                sys.exit(traindeck.PREEMPTED_EXIT)
            idx = order[position * args.batch_size:(position + 1) * args.batch_size]
            optimizer.zero_grad()
            logits = model(x[idx])
            loss = loss_fn(logits, y[idx])
            loss.backward()
            optimizer.step()
            step += 1
            position += 1
            accuracy = (logits.argmax(1) == y[idx]).float().mean().item()
            traindeck.log(step=step, epoch=epoch + 1, loss=loss.item(), accuracy=accuracy, lr=args.lr)
        epoch += 1
        position = 0
        with torch.no_grad():
            accuracy = (model(tx).argmax(1) == ty).float().mean().item()
        traindeck.evaluate("test", step, accuracy=accuracy, epoch=epoch)
        print(f"epoch {epoch}/{args.epochs}  test accuracy {100 * accuracy:.2f}%", flush=True)
        save()
    traindeck.status("finished", step=step)


if __name__ == "__main__":
    main()

"""A small multilayer perceptron in PyTorch (CPU or CUDA).

Shows how each seed source drives its own randomness, so the host can vary them one at
a time: ``init`` the weights, ``dropout`` the dropout masks, ``data_order`` the order
of the mini-batches. Bit-identical results on the same device for the same seeds.
"""

import torch
from torch import nn
from varboard_recipe import from_proba, label_indices, seed_everything, torch_generator

HYPERPARAMETERS = {"hidden": 64, "dropout": 0.1, "lr": 0.01, "epochs": 15, "batch_size": 64}
SEARCH_SPACE = {
    "hidden": {"type": "int", "low": 16, "high": 128},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.5},
    "lr": {"type": "loguniform", "low": 1e-3, "high": 3e-2},
}


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    hp = hyperparameters
    mean, std = train.X.mean(axis=0), train.X.std(axis=0) + 1e-6

    def tensor(X):
        return torch.as_tensor((X - mean) / std, dtype=torch.float32, device=device)

    X, y = tensor(train.X), torch.as_tensor(label_indices(train), device=device)
    seed_everything(seeds, "init")  # weights
    model = nn.Sequential(
        nn.Linear(X.shape[1], int(hp["hidden"])),
        nn.ReLU(),
        nn.Dropout(float(hp["dropout"])),
        nn.Linear(int(hp["hidden"]), len(train.classes)),
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(hp["lr"]))
    torch.manual_seed(seeds["dropout"])  # dropout masks draw from the global generator
    order = torch_generator(seeds, "data_order")  # mini-batch order
    batch = int(hp["batch_size"])
    for _ in range(int(hp["epochs"])):
        model.train()
        for idx in torch.randperm(len(X), generator=order).split(batch):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(X[idx.to(device)]), y[idx.to(device)]).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        proba = torch.softmax(model(tensor(test_inputs.X)), dim=1)
    return from_proba(proba.double().cpu().numpy(), test_inputs)

"""A small convolutional network for the 8x8 digits images (features are the 64 pixels).

Data augmentation (random shifts of one pixel) draws from the ``augmentation`` seed.
"""

import torch
from torch import nn
from varboard_recipe import from_proba, label_indices, rng, seed_everything, torch_generator

HYPERPARAMETERS = {"channels": 8, "lr": 0.005, "epochs": 8, "batch_size": 64, "shift_prob": 0.3}
SEARCH_SPACE = {
    "channels": {"type": "choice", "values": [4, 8, 16]},
    "lr": {"type": "loguniform", "low": 1e-3, "high": 2e-2},
}


def images(X, device):
    return torch.as_tensor(X / 16.0, dtype=torch.float32, device=device).reshape(-1, 1, 8, 8)


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    hp = hyperparameters
    c = int(hp["channels"])
    X, y = images(train.X, device), torch.as_tensor(label_indices(train), device=device)
    seed_everything(seeds, "init")
    model = nn.Sequential(
        nn.Conv2d(1, c, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(c, 2 * c, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(2 * c * 16, len(train.classes)),
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(hp["lr"]))
    order, augment = torch_generator(seeds, "data_order"), rng(seeds, "augmentation")
    for _ in range(int(hp["epochs"])):
        model.train()
        for idx in torch.randperm(len(X), generator=order).split(int(hp["batch_size"])):
            xb = X[idx.to(device)]
            if augment.random() < float(hp["shift_prob"]):
                dx, dy = (int(v) for v in augment.integers(-1, 2, size=2))
                xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), y[idx.to(device)]).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        proba = torch.softmax(model(images(test_inputs.X, device)), dim=1)
    return from_proba(proba.double().cpu().numpy(), test_inputs)

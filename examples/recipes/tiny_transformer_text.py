"""A one-layer BERT-style classifier for short texts, built from a config (no download).

The tokenizer is a word-level vocabulary built from the training texts inside the
recipe; unknown words map to [UNK]. Runs in a few seconds on a CPU.
"""

import re

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification
from varboard_recipe import from_proba, label_indices, seed_everything, torch_generator

HYPERPARAMETERS = {"hidden": 32, "epochs": 4, "lr": 0.003, "batch_size": 32, "max_len": 16}
SEARCH_SPACE = {"lr": {"type": "loguniform", "low": 5e-4, "high": 1e-2}}

PAD, UNK, CLS = 0, 1, 2


def words(text):
    return re.findall(r"[a-z']+", str(text).lower())


def encode(texts, vocab, max_len):
    ids = np.full((len(texts), max_len), PAD, dtype=np.int64)
    for i, text in enumerate(texts):
        tokens = [CLS] + [vocab.get(w, UNK) for w in words(text)][: max_len - 1]
        ids[i, : len(tokens)] = tokens
    ids = torch.as_tensor(ids)
    return ids, (ids != PAD).long()


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    hp = hyperparameters
    vocab = {}
    for text in train.X:
        for w in words(text):
            vocab.setdefault(w, len(vocab) + 3)
    max_len = int(hp["max_len"])
    ids, mask = encode(train.X, vocab, max_len)
    y = torch.as_tensor(label_indices(train))
    seed_everything(seeds, "init")
    config = BertConfig(
        vocab_size=len(vocab) + 3,
        hidden_size=int(hp["hidden"]),
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * int(hp["hidden"]),
        max_position_embeddings=max_len,
        num_labels=len(train.classes),
        pad_token_id=PAD,
    )
    model = BertForSequenceClassification(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(hp["lr"]))
    torch.manual_seed(seeds["dropout"])
    order = torch_generator(seeds, "data_order")
    for _ in range(int(hp["epochs"])):
        model.train()
        for idx in torch.randperm(len(ids), generator=order).split(int(hp["batch_size"])):
            optimizer.zero_grad()
            out = model(input_ids=ids[idx].to(device), attention_mask=mask[idx].to(device), labels=y[idx].to(device))
            out.loss.backward()
            optimizer.step()
    model.eval()
    test_ids, test_mask = encode(test_inputs.X, vocab, max_len)
    with torch.no_grad():
        logits = model(input_ids=test_ids.to(device), attention_mask=test_mask.to(device)).logits
    return from_proba(torch.softmax(logits, dim=1).double().cpu().numpy(), test_inputs)

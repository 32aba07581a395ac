"""Hostile: writes a 1 GB file. The run must fail on the file-size limit."""


def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    chunk = b"x" * (1 << 20)
    with open("huge.bin", "wb") as fh:
        for _ in range(1024):
            fh.write(chunk)
    raise RuntimeError("the file-size limit was not enforced")

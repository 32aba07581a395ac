"""Helpers shared by the dataset tests: a small CSV and a reader with a generous limit."""

import io

from evaluation.io.read import read_table

LIMIT = 1_000_000


def read(text, filename="data.csv", **kwargs):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return read_table(data, filename=filename, max_bytes=kwargs.pop("max_bytes", LIMIT), **kwargs)


def parquet_bytes(df):
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


DATASET = "id,x1,x2,label,is_test\n007,1.5,a,cat,0\n008,2.5,b,dog,0\n009,3.5,c,cat,1\n010,4.5,d,bird,1\n"

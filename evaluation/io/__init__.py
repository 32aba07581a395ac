"""Reading uploaded files: text decoding and CSV records (:mod:`evaluation.io.text`),
hosts' tables in CSV or Parquet (:mod:`evaluation.io.read`). No Django here."""

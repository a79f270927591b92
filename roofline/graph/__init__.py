"""A model as the tool sees it: loaded from a model file (``loading``), captured as an ordered list
of aten ops with tensor metadata (``capture``, ``ops``), at other batch sizes (``rebatch``), and
replayed on real tensors (``replay``)."""

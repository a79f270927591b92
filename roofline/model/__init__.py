"""The model of time: calibrated curves as functions of an op's size (``curves``), one profile part
as prediction reads it (``device``), kernel time per op (``kernels``), host cost per op (``host``),
and the eager timeline (``timeline``)."""

"""Imports every formula family so that their ``@register`` decorators run.

One module per op family; adding a family means adding its import here.
"""

from roofline.costs import (  # noqa: F401
    attention,
    backward,
    conv,
    copy,
    creation,
    dropout,
    embedding,
    indexing,
    matmul,
    norm,
    optimizer,
    pointwise,
    pooling,
    reduction,
    rnn,
    shape,
    softmax,
)

"""keras.io's own code that more than one test builds its examples with, as keras.io writes it."""

from __future__ import annotations

from keras import layers, ops


class TokenAndPositionEmbedding(layers.Layer):
    """ "Text classification with Transformer": a token and a position embedding, added."""

    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions


def loss(margin=1):
    """ "Image similarity estimation using a Siamese Network with a contrastive loss": its `loss(margin)`."""

    def contrastive_loss(y_true, y_pred):
        square_pred = ops.square(y_pred)
        margin_square = ops.square(ops.maximum(margin - (y_pred), 0))
        return ops.mean((1 - y_true) * square_pred + (y_true) * margin_square)

    return contrastive_loss

"""SPE-CNN: the convolution's filters and window, and the layout of the
sinusoidal positions. Defaults are the paper's (128 filters, window 3,
interleaved sin/cos).
"""

from keras_posattn.hypermodel import ZooHyperModel
from keras_posattn.hypermodel import register_search


@register_search("spe_cnn")
class HyperSPECNN(ZooHyperModel):
    """SPE-CNN's filters (16 to 512, powers of two), window and position layout."""

    def space(self, hp):
        return {
            "filters": hp.Int("filters", 16, 512, step=2, sampling="log",
                              default=int(self.default("filters"))),
            "kernel_size": hp.Int("kernel_size", 2, 5, default=int(self.default("kernel_size"))),
            "position_encoding": hp.Choice(
                "position_encoding", ["interleaved", "concatenated", "none"],
                default=self.default("position_encoding")),
        }

"""HCAN (hierarchical and flat): the attention width d, the heads, the
convolutions' window, one or two parallel self-attentions and the pooling
(Table 2's axes). Defaults are the paper's (d 512, 8 heads, window 3, two
self-attentions, target attention). The paper tuned d and h on Yelp 2013's
dev set (section 4.2).
"""

from keras_posattn.hypermodel import ZooHyperModel
from keras_posattn.hypermodel import register_search


class _HCANSearch(ZooHyperModel):
    """d (32 to 512, powers of two; heads must divide it), heads (2, 4, 8),
    window (1 to 5), self-attentions (1, 2) and pooling (target, max)."""

    def space(self, hp):
        units = hp.Int("units", 32, 512, step=2, sampling="log",
                       default=int(self.default("units")))
        heads = hp.Choice("num_heads", [2, 4, 8], default=int(self.default("num_heads")))
        return {
            "units": units,
            "num_heads": heads,
            "kernel_size": hp.Int("kernel_size", 1, 5, default=int(self.default("kernel_size"))),
            "self_attentions": hp.Choice("self_attentions", [1, 2],
                                         default=int(self.default("self_attentions"))),
            "pooling": hp.Choice("pooling", ["target", "max"], default=self.default("pooling")),
        }


@register_search("hcan")
class HyperHCAN(_HCANSearch):
    """Hierarchical HCAN."""


@register_search("hcan_flat")
class HyperFlatHCAN(_HCANSearch):
    """HCAN's block over the whole text."""

"""CSPAN: the number of queries of the multi-query pooling (the paper's Table
4 compares 1 to 128), the Bi-LSTM's depth, and the fusion of the m pooled
vectors. Defaults are the preset's (CSPAN base: 16 queries, 1 layer, concat).
"""

from keras_posattn.hypermodel import ZooHyperModel
from keras_posattn.hypermodel import register_search


@register_search("cspan")
class HyperCSPAN(ZooHyperModel):
    """CSPAN's query count (1 to 128, powers of two), Bi-LSTM layers, query fusion."""

    def space(self, hp):
        return {
            # step=2 with log sampling: 1, 2, 4, ..., 128.
            "num_queries": hp.Int("num_queries", 1, 128, step=2, sampling="log",
                                  default=int(self.default("num_queries"))),
            "num_layers": hp.Int("num_layers", 1, 3, default=int(self.default("num_layers"))),
            "query_fusion": hp.Choice("query_fusion", ["concat", "mean"],
                                      default=self.default("query_fusion")),
        }

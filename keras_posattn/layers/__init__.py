"""Keras layers of keras_posattn, one file each."""

from keras_posattn.layers.classification_head import ClassificationHead
from keras_posattn.layers.context_attention import ContextAttention
from keras_posattn.layers.conv_multi_head_self_attention import ConvMultiHeadSelfAttention
from keras_posattn.layers.fold_sentences import FoldSentences
from keras_posattn.layers.fusion_gate import FusionGate
from keras_posattn.layers.masked_conv1d import MaskedConv1D
from keras_posattn.layers.masked_global_pooling1d import MaskedGlobalPooling1D
from keras_posattn.layers.masked_max_pooling1d import MaskedMaxPooling1D
from keras_posattn.layers.masked_self_attention import MaskedSelfAttention
from keras_posattn.layers.multi_dimensional_attention import MultiDimensionalAttention
from keras_posattn.layers.multi_head_self_attention import MultiHeadSelfAttention
from keras_posattn.layers.multi_query_attention import MultiQueryAttention
from keras_posattn.layers.multi_region_embedding import MultiRegionEmbedding
from keras_posattn.layers.position_embedding import PositionEmbedding
from keras_posattn.layers.position_fusion import PositionFusion
from keras_posattn.layers.pyramid_block import PyramidBlock
from keras_posattn.layers.residual_conv_block import ResidualConvBlock
from keras_posattn.layers.sinusoidal_position_encoding import SinusoidalPositionEncoding
from keras_posattn.layers.target_attention import TargetAttention
from keras_posattn.layers.token_embedding import TokenEmbedding
from keras_posattn.layers.unfold_sentences import UnfoldSentences

__all__ = [
    "ClassificationHead",
    "ContextAttention",
    "ConvMultiHeadSelfAttention",
    "FoldSentences",
    "FusionGate",
    "MaskedConv1D",
    "MaskedGlobalPooling1D",
    "MaskedMaxPooling1D",
    "MaskedSelfAttention",
    "MultiDimensionalAttention",
    "MultiHeadSelfAttention",
    "MultiQueryAttention",
    "MultiRegionEmbedding",
    "PositionEmbedding",
    "PositionFusion",
    "PyramidBlock",
    "ResidualConvBlock",
    "SinusoidalPositionEncoding",
    "TargetAttention",
    "TokenEmbedding",
    "UnfoldSentences",
]

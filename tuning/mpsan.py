"""MPSAN: which positional masks the branches use, and the Faraway radii.

The paper's Table 2 compares mask sets; ``mask_set`` chooses among them
(``fa`` stands for the two Faraway windows, whose radii are searched too:
``faraway_near`` and ``faraway_near + faraway_gap``). The default is the paper's
MPSAN: FA(2), FA(3), BW+SD, FW+SD. Learning rate and dropout are searched for
every family (``ZooHyperModel.common_space``).
"""

from keras_posattn.hypermodel import ZooHyperModel
from keras_posattn.hypermodel import register_search

#: Table 2's mask sets; "fa" marks a Faraway window (radii searched separately).
MASK_SETS = {
    "fa,fa,bw+sd,fw+sd": "MPSAN (the paper's choice)",
    "bw,fw": "Table 2 model 1",
    "bw+sd,fw+sd": "model 2",
    "fa,fa": "model 3",
    "fa,fa,bw,fw": "model 4",
    "fa+sd,fa+sd,bw+sd,fw+sd": "model 5",
    "fa,fa,bw+d,fw+d": "model 6",
}


def expand(mask_set, near, far):
    """``"fa,fa,bw+sd,fw+sd"`` with radii 2, 3 -> ``["fa2", "fa3", "bw+sd", "fw+sd"]``."""
    radii = iter((near, far))
    masks = []
    for part in mask_set.split(","):
        pieces = part.split("+")
        if pieces[0] == "fa":
            pieces[0] = f"fa{next(radii)}"
        masks.append("+".join(pieces))
    return masks


@register_search("mpsan")
class HyperMPSAN(ZooHyperModel):
    """MPSAN's mask sets (Table 2) and Faraway radii."""

    def space(self, hp):
        mask_set = hp.Choice("mask_set", list(MASK_SETS), default="fa,fa,bw+sd,fw+sd")
        near = gap = None
        with hp.conditional_scope("mask_set", [m for m in MASK_SETS if "fa" in m]):
            near = hp.Int("faraway_near", 1, 4, default=2)
            gap = hp.Int("faraway_gap", 1, 3, default=1)
        far = near + gap if "fa" in mask_set else None
        return {"branch_masks": expand(mask_set, near, far)}

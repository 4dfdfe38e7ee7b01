"""EPN: the pyramid's depth (the paper's Table 3 compares 1, 3, 5 and 7 blocks;
"3 is a good choice to try first") and the region sizes of the multi-region
embedding (Table 4: 3/4/5 against a single 3 or 5). Defaults are the preset's.
"""

from keras_posattn.hypermodel import ZooHyperModel
from keras_posattn.hypermodel import register_search

#: Region sets, as "sizes:filters" (the filters add up to the blocks' width).
REGION_SETS = {
    "3,4,5:30,30,40": ([3, 4, 5], [30, 30, 40]),
    "3:100": ([3], [100]),
    "5:100": ([5], [100]),
    "2,3,4,5:25,25,25,25": ([2, 3, 4, 5], [25, 25, 25, 25]),
}


def region_key(sizes, filters):
    return ",".join(map(str, sizes)) + ":" + ",".join(map(str, filters))


@register_search("epn")
class HyperEPN(ZooHyperModel):
    """EPN's number of pyramid blocks (1 to 7) and region sets."""

    def space(self, hp):
        units = int(self.default("units"))
        sets = {key: value for key, value in REGION_SETS.items() if sum(value[1]) == units}
        preset = region_key(self.default("region_sizes"), self.default("region_filters"))
        sets.setdefault(preset, (list(self.default("region_sizes")),
                                 list(self.default("region_filters"))))
        regions = hp.Choice("regions", list(sets), default=preset)
        sizes, filters = sets[regions]
        return {
            "num_blocks": hp.Int("num_blocks", 1, 7, default=int(self.default("num_blocks"))),
            "region_sizes": sizes,
            "region_filters": filters,
        }

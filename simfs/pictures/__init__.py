"""Pictures and their figures, for `simfs` commands and the experiments alike: an image's
block map (blockmap: who owns each block; drawmap: the PNG) and seekwatcher-style plots of
request traces (seekplot). Nothing here parses arguments or prints."""

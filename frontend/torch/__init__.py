"""FX graphs (torch.fx.symbolic_trace, make_fx / aot_module ATen graphs) to spire's graph IR."""
from .builder import Builder, SpireValue, Unsupported
from .convert import convert_segment, ConvertedSegment
from .probe import probe
from .segments import Segment, split_segments

__all__ = ["Builder", "SpireValue", "Unsupported", "convert_segment", "ConvertedSegment", "probe", "Segment",
           "split_segments"]

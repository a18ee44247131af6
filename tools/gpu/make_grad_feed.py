"""Writes the feed of the imported-model gradient check: the model's weights and inputs, plus a fixed random
loss_weight shaped like the output y. usage: make_grad_feed.py WEIGHTS INPUTS OUT"""
import sys

import numpy as np

from safetensors_io import read_safetensors, write_safetensors

weights, inputs, out = sys.argv[1:4]
feed = dict(read_safetensors(weights))
feed.update(read_safetensors(inputs))
feed["loss_weight"] = np.random.default_rng(7).uniform(-1, 1, feed["x"].shape).astype(np.float32)
write_safetensors(out, feed)

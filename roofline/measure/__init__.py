"""``--measure``: instruments that run the model on the profile's device and time it by the shared
timing protocol (``roofline.timing``): end to end beside the host-speed index, op by op under the
profiler, and its CUDA-graph and torch.compile alternatives and CPU/GPU placement in rounds
alternating with eager. They sit beside the model of time: prediction never imports them."""

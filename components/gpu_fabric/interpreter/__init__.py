"""What gpu-fabric's processes do to their own interpreter: the cyclic garbage collector (:mod:`.collector`).

The lowest layer: the commands, the offline render and the policy pack's analyzer calls all use it."""

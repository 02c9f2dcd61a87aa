"""The gpu-fabric CrossGuard policy pack: ``pulumi preview --policy-pack ./policy``.

The only place a ``PolicyPack`` is constructed (constructing it starts the analyzer's gRPC server,
prints its port and serves until the engine stops it). The policies and the pack's settings live in
``gpu_fabric.policies`` so other packs can compose them and ``gpu-fabric check --preview`` serves
the same pack in process.
"""

from pulumi_policy import PolicyPack

from gpu_fabric import __version__
from gpu_fabric.policies import ALL_POLICIES, PACK_SETTINGS, pack_display_name
from gpu_fabric.policies.engine_wire import decode_non_finite_numbers, share_decoding_per_call

decode_non_finite_numbers()  # a NaN input is the finite-numbers policy's refusal, not a failed preview
share_decoding_per_call()  # each call decodes its resources once, not once per policy (issue 39)

PolicyPack(policies=list(ALL_POLICIES), display_name=pack_display_name(__version__), **PACK_SETTINGS)

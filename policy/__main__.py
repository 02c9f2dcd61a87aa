"""The gpu-fabric CrossGuard policy pack: ``pulumi preview --policy-pack ./policy``.

The only place a ``PolicyPack`` is constructed (constructing it starts the analyzer's gRPC server,
prints its port and serves until the engine stops it). The policies and the pack's settings live in
``gpu_fabric.policies`` so other packs can compose them and ``gpu-fabric check --preview`` serves
the same pack in process.

The engine waits for this process's handshake before the stack program registers anything, so the pack
answers it before importing the policies' rules: it serves the policies as described by
``gpu_fabric/policies/pack_policies.json`` and imports the real ones in a thread meanwhile
(:mod:`gpu_fabric.policies.served_pack`, issue 39).
"""

from pulumi_policy import PolicyPack

from gpu_fabric import __version__
from gpu_fabric.policies import PACK_SETTINGS, pack_display_name
from gpu_fabric.policies.analyzer_calls import decode_non_finite_numbers, share_decoding_per_call
from gpu_fabric.policies.served_pack import import_policies_in_background, served_policies

decode_non_finite_numbers()  # a NaN input is the finite-numbers policy's refusal, not a failed preview
share_decoding_per_call()  # each call decodes its resources once, not once per policy (issue 39)
policies = served_policies()
import_policies_in_background()

PolicyPack(policies=policies, display_name=pack_display_name(__version__), **PACK_SETTINGS)

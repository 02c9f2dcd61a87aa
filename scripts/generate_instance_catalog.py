"""Generate gpu-fabric's bundled instance table, ``components/gpu_fabric/data/ec2_instance_types.json.gz``.

The table is EC2's own ``DescribeInstanceTypes`` answer (every page, every instance type, EFA or
not), each item trimmed to the fields gpu-fabric reads and kept in boto3's PascalCase shape:
``InstanceType``, ``ProcessorInfo.SupportedArchitectures``, ``VCpuInfo.DefaultVCpus``,
``MemoryInfo.SizeInMiB``, ``GpuInfo`` (per GPU: ``Count``, ``Manufacturer``, ``Name``,
``MemoryInfo``) and ``NetworkInfo`` (``EfaSupported``, ``EfaInfo.MaximumEfaInterfaces``,
``MaximumNetworkCards``, ``MaximumNetworkInterfaces``, ``NetworkCards[]`` with
``NetworkCardIndex``, ``MaximumNetworkInterfaces``, ``InterfaceTypes``). Items are sorted by name
and written with sorted keys into a gzip stream with ``mtime=0``, so a rerun over the same data
on the same day is byte-identical.

The table also records where it came from, so "it may lag EC2" can be judged (``gpu-fabric
efa-info`` prints it): ``Generated.At`` (the UTC date, ``--generated-at``), ``Generated.Region``
(``--region``) and ``Generated.Source`` (what answered: EC2 itself, or the endpoint standing in
for it; ``--source`` names it in words, e.g. moto's version).

Regenerate from live EC2 (needs credentials allowed to call ``ec2:DescribeInstanceTypes``)::

    python scripts/generate_instance_catalog.py --region us-east-1

or, as the committed table was made, from the AWS data that moto ships, on loopback::

    moto_server -H 127.0.0.1 -p 5055 &
    AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \\
        python scripts/generate_instance_catalog.py --endpoint-url http://127.0.0.1:5055 \\
        --source "moto 5.2.5's copy of EC2's DescribeInstanceTypes answer"

Options: ``--region`` (default us-east-1), ``--endpoint-url`` (default: boto3's, which honours
``AWS_ENDPOINT_URL``), ``--profile``, ``--out`` (default: the bundled table's path),
``--generated-at`` (default: today, UTC), ``--source`` (default: "EC2 DescribeInstanceTypes", or
"DescribeInstanceTypes at <endpoint>" with ``--endpoint-url``).
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "components" / "gpu_fabric" / "data" / "ec2_instance_types.json.gz"

# The kept subset of a DescribeInstanceTypes item: a nested dict of kept keys; ``True`` keeps the
# value whole, a one-element list applies its spec to every element of a list value.
KEPT_FIELDS: dict[str, Any] = {
    "InstanceType": True,
    "ProcessorInfo": {"SupportedArchitectures": True},
    "VCpuInfo": {"DefaultVCpus": True},
    "MemoryInfo": {"SizeInMiB": True},
    "GpuInfo": {
        "Gpus": [{"Count": True, "Manufacturer": True, "Name": True, "MemoryInfo": True}],
        "TotalGpuMemoryInMiB": True,
    },
    "NetworkInfo": {
        "EfaSupported": True,
        "EfaInfo": {"MaximumEfaInterfaces": True},
        "MaximumNetworkCards": True,
        "MaximumNetworkInterfaces": True,
        "NetworkCards": [{"NetworkCardIndex": True, "MaximumNetworkInterfaces": True, "InterfaceTypes": True}],
    },
    # Whether the type may join a cluster placement group (an EFA domain's shared group needs it).
    "PlacementGroupInfo": {"SupportedStrategies": True},
}


def trim(value: Any, spec: Any) -> Any:
    """Keep only the parts of ``value`` that ``spec`` names (see ``KEPT_FIELDS``)."""
    if spec is True:
        return value
    if isinstance(spec, list):
        return [trim(element, spec[0]) for element in value]
    return {key: trim(value[key], sub_spec) for key, sub_spec in spec.items() if key in value}


def fetch_all_instance_types(region: str, endpoint_url: str | None, profile: str | None) -> list[dict]:
    """Every page of ``DescribeInstanceTypes`` in ``region``."""
    import boto3
    from botocore.config import Config

    session = boto3.Session(profile_name=profile, region_name=region)
    client = session.client("ec2", endpoint_url=endpoint_url, config=Config(retries={"mode": "standard"}))
    items: list[dict] = []
    for page in client.get_paginator("describe_instance_types").paginate():
        items.extend(page.get("InstanceTypes", []))
    return items


def render_table(items: Sequence[Mapping[str, Any]], generated: Mapping[str, str] | None = None) -> bytes:
    """The gzip bytes of the table; deterministic for the same input.

    ``generated`` is the ``Generated`` block: ``At`` (UTC date), ``Region``, ``Source``.
    """
    trimmed = sorted((trim(item, KEPT_FIELDS) for item in items), key=lambda item: item["InstanceType"])
    document: dict[str, Any] = {"InstanceTypes": trimmed}
    if generated is not None:
        document["Generated"] = dict(generated)
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"
    return gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--region", default="us-east-1", help="region to describe (default: us-east-1)")
    parser.add_argument("--endpoint-url", default=None, help="EC2 endpoint, e.g. moto's server on loopback")
    parser.add_argument("--profile", default=None, help="AWS profile")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output file (default: {DEFAULT_OUT})")
    parser.add_argument("--generated-at", default=None, metavar="YYYY-MM-DD",
                        help="the date to record (default: today, UTC)")
    parser.add_argument("--source", default=None,
                        help="what answered, in words (default: EC2, or the endpoint given with --endpoint-url)")
    args = parser.parse_args(argv)

    generated_at = args.generated_at or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    datetime.date.fromisoformat(generated_at)  # refuse anything but a date
    source = args.source or (f"DescribeInstanceTypes at {args.endpoint_url}" if args.endpoint_url
                             else "EC2 DescribeInstanceTypes")
    items = fetch_all_instance_types(args.region, args.endpoint_url, args.profile)
    payload = render_table(items, {"At": generated_at, "Region": args.region, "Source": source})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(payload)
    efa_count = sum(1 for item in items if item.get("NetworkInfo", {}).get("EfaSupported"))
    print(f"wrote {args.out}: {len(items)} instance types ({efa_count} EFA-capable), {len(payload)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""EC2 instance facts: ``DescribeInstanceTypes`` items from boto3, or from the bundled table.

One small interface and its providers, as Karpenter lays out ``pkg/providers/instancetype``:

* :mod:`~gpu_fabric.aws.catalog.types`: the items, the facts read from them (:class:`InstanceFacts`), the
  :class:`InstanceCatalog` interface and :class:`UnknownInstanceTypeError`;
* :mod:`~gpu_fabric.aws.catalog.ec2`: :class:`Ec2InstanceCatalog`, EC2 (or moto's server) through boto3,
  cached per process;
* :mod:`~gpu_fabric.aws.catalog.table` and :mod:`~gpu_fabric.aws.catalog.bundled`: the bundled table written by
  ``scripts/generate_instance_catalog.py``, and :class:`BundledInstanceCatalog` serving it offline;
* :mod:`~gpu_fabric.aws.catalog.selection`: EC2 first and the bundled table second
  (:func:`describe_with_fallback`), and the catalog set for the current context (:func:`use_catalog`).

Import each name from its module; this package re-exports nothing, so importing it loads no provider.
"""

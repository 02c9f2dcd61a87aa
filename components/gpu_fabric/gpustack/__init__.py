"""gpustack"""

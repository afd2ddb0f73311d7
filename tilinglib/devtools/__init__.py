"""Tools for the course's maintainers, not for students: `bench` compiles the course's
kernels with nvcc and times them on a GPU to fill `tilinglib/data`
(``python -m tilinglib.devtools.bench``).
"""

"""Print every status name and message the installed CUDA libraries return (driver, cuBLAS, cuDNN, NCCL, cuSPARSE)."""
import ctypes
import glob
import sys


def lib(pattern: str) -> ctypes.CDLL | None:
    hits = sorted(glob.glob(pattern, recursive=True))
    if not hits:
        print(f"# not found: {pattern}")
        return None
    print(f"# library: {hits[-1]}")
    return ctypes.CDLL(hits[-1])


site = sys.argv[1]
which = sys.argv[2]
if which == "driver":
    cu = ctypes.CDLL("libcuda.so.1")
    v = ctypes.c_int()
    cu.cuDriverGetVersion(ctypes.byref(v))
    print(f"# driver API version {v.value}")
    for code in range(0, 1100):
        name, msg = ctypes.c_char_p(), ctypes.c_char_p()
        if cu.cuGetErrorName(code, ctypes.byref(name)) != 0:
            continue
        cu.cuGetErrorString(code, ctypes.byref(msg))
        print(f"{code}\t{name.value.decode()}\t{msg.value.decode()}")
elif which == "cublas":
    h = lib(f"{site}/nvidia/**/libcublas.so.*[0-9]")
    if h:
        h.cublasGetStatusName.restype = h.cublasGetStatusString.restype = ctypes.c_char_p
        for code in range(0, 32):
            n = h.cublasGetStatusName(code).decode()
            print(f"{code}\t{n}\t{h.cublasGetStatusString(code).decode()}")
elif which == "cudnn":
    h = lib(f"{site}/nvidia/**/libcudnn_graph.so.*[0-9]") or lib(f"{site}/nvidia/**/libcudnn.so.*[0-9]")
    if h:
        h.cudnnGetErrorString.restype = ctypes.c_char_p
        seen = set()
        for code in list(range(0, 20)) + list(range(1000, 6100)):
            s = h.cudnnGetErrorString(code).decode()
            if s not in seen:
                seen.add(s)
                print(f"{code}\t{s}")
elif which == "nccl":
    h = lib(f"{site}/nvidia/**/libnccl.so.*[0-9]")
    if h:
        v = ctypes.c_int()
        h.ncclGetVersion(ctypes.byref(v))
        print(f"# nccl version {v.value}")
        h.ncclGetErrorString.restype = ctypes.c_char_p
        for code in range(0, 12):
            print(f"{code}\t{h.ncclGetErrorString(code).decode()}")
elif which == "cusparse":
    h = lib(f"{site}/nvidia/**/libcusparse.so.*[0-9]")
    if h:
        h.cusparseGetErrorName.restype = h.cusparseGetErrorString.restype = ctypes.c_char_p
        for code in range(0, 16):
            print(f"{code}\t{h.cusparseGetErrorName(code).decode()}\t{h.cusparseGetErrorString(code).decode()}")

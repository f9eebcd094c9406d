"""Small text progress bar, used when tqdm is not installed on the machine."""
import sys
import time

try:
    from tqdm import tqdm as _tqdm
except ImportError:
    _tqdm = None


class Bar:
    def __init__(self, iterable=None, total=None, desc="", unit="it", mininterval=0.5, file=None):
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total = total
        self.desc = desc
        self.unit = unit
        self.mininterval = mininterval
        self.file = file or sys.stderr
        self.n = 0
        self.postfix = ""
        self.start = self.last = time.perf_counter()

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def set_postfix(self, **kw):
        self.postfix = ", ".join(f"{k}={v}" for k, v in kw.items())

    def _render(self):
        elapsed = time.perf_counter() - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        if self.total:
            frac = self.n / self.total
            bar = "#" * int(frac * 20)
            head = f"{self.desc}: {100 * frac:3.0f}%|{bar:<20}| {self.n}/{self.total}"
        else:
            head = f"{self.desc}: {self.n}"
        tail = f" [{elapsed:.1f}s, {rate:.1f}{self.unit}/s" + (f", {self.postfix}" if self.postfix else "") + "]"
        self.file.write("\r" + head + tail)
        self.file.flush()

    def update(self, n=1):
        self.n += n
        now = time.perf_counter()
        if now - self.last >= self.mininterval:
            self.last = now
            self._render()

    def close(self):
        self._render()
        self.file.write("\n")
        self.file.flush()


def progress(iterable=None, **kw):
    if _tqdm is not None:
        return _tqdm(iterable, **kw)
    return Bar(iterable, **kw)

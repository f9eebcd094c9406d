import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Debouncer, bestSuffixMatch, commonSuffixLength, rewriteDenpexCommand, shellQuote } from '../../core/util';

describe('Debouncer (restart on setting change)', () => {
  it('runs once, after the last of a burst of triggers', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let runs = 0;
    const d = new Debouncer(1000, () => void runs++);
    d.trigger();
    t.mock.timers.tick(600);
    d.trigger();
    t.mock.timers.tick(600);
    d.trigger();
    assert.equal(runs, 0);
    assert.equal(d.pending, true);
    t.mock.timers.tick(1000);
    assert.equal(runs, 1);
    assert.equal(d.pending, false);
    d.trigger();
    d.dispose();
    t.mock.timers.tick(5000);
    assert.equal(runs, 1, 'disposed: the pending run is cancelled');
  });
});

describe('frame paths', () => {
  it('matches container paths to workspace files by the longest suffix', () => {
    const ws = ['/home/u/proj/gpu/multi/a_item_capture_rank1.py', '/home/u/proj/old/a_item_capture_rank1.py', '/home/u/proj/train.py'];
    assert.equal(bestSuffixMatch('/workspace/gpu/multi/a_item_capture_rank1.py', ws), ws[0]);
    assert.equal(bestSuffixMatch('C:\\work\\proj\\train.py', ws), ws[2]);
    assert.equal(bestSuffixMatch('/x/other.py', ws), undefined);
    assert.equal(commonSuffixLength('/a/b/c.py', 'b/c.py'), 2);
  });
});

describe('verification command', () => {
  it('runs denpex through the CLI the extension found', () => {
    assert.equal(
      rewriteDenpexCommand('denpex run --expect-absent capture-item-sync -- python train.py', ['python3', '-I', '/ext dir/denpex_server.py']),
      "python3 -I '/ext dir/denpex_server.py' run --expect-absent capture-item-sync -- python train.py",
    );
    assert.equal(rewriteDenpexCommand('denpex run x', undefined), 'denpex run x');
    assert.equal(rewriteDenpexCommand('python denpex.py', ['py']), 'python denpex.py');
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
  });
});

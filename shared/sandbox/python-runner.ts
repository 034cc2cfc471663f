// The Python side of a sandbox call, the same in every sandbox: it calls a plugin's `module:function` with its
// argument (and the `svc` object for workflow plugins) or runs a code interpreter's code as `__main__`, then
// prints nothing of its own and returns one JSON text: the value, or why the call failed, and the files the
// code wrote in its working directory. A sandbox adapter defines `_svc_call(method, args_json) -> str`
// before calling `_sandbox_run(job_json)`; an exception with `sandbox_pending` set passes through (the
// sessions adapter's way to stop at an `svc` call it has no answer for yet).

/** What `_sandbox_run` answers, as JSON. */
export type RunnerAnswer = { ok: true; value: unknown; written: string[] } | { ok: false; error: string };

export const PYTHON_RUNNER = String.raw`
import json as _json, os as _os, sys as _sys, importlib as _importlib, traceback as _traceback

class _Svc:
    """What a workflow plugin may ask of the service: a model's answer, and a knowledge index's passages."""
    def complete(self, ai_model_object_id, messages):
        return self._ask('complete', {'ai_model_object_id': ai_model_object_id, 'messages': messages})
    def search(self, index_name, query, top_n=5):
        return self._ask('search', {'index_name': index_name, 'query': query, 'top_n': top_n})
    def _ask(self, method, args):
        answer = _json.loads(_svc_call(method, _json.dumps(args)))
        if 'error' in answer:
            raise RuntimeError('svc.' + method + ': ' + answer['error'])
        return answer['value']

def _files(root):
    found = {}
    for base, _dirs, names in _os.walk(root):
        for name in names:
            path = _os.path.join(base, name)
            try:
                found[_os.path.relpath(path, root)] = _os.stat(path).st_mtime_ns
            except OSError:
                pass
    return found

def _reason(e):
    last = _traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
    where = (' (' + _os.path.basename(last[0].filename) + ', line ' + str(last[0].lineno) + ')') if last else ''
    return (type(e).__name__ + ': ' + str(e))[:1000] + where

def _sandbox_run(job_json):
    job = _json.loads(job_json)
    _os.environ.clear()
    work = job['work_dir']
    _os.chdir(work)
    before = _files(work)
    try:
        if 'code' in job:
            exec(compile(job['code'], '<code>', 'exec'), {'__name__': '__main__'})
            value = None
        else:
            _sys.path.insert(0, job['package_dir'])
            module_name, _, function_name = job['entry_point'].partition(':')
            fn = getattr(_importlib.import_module(module_name), function_name)
            value = fn(job['argument'], _Svc()) if job.get('svc') else fn(job['argument'])
    except BaseException as e:
        if getattr(e, 'sandbox_pending', False):
            raise
        return _json.dumps({'ok': False, 'error': _reason(e)})
    finally:
        # What the code printed without a line end is still in the buffer.
        _sys.stdout.flush()
    try:
        text = _json.dumps(value)
    except (TypeError, ValueError) as e:
        return _json.dumps({'ok': False, 'error': 'the plugin returned something that is not JSON: ' + str(e)[:300]})
    after = _files(work)
    written = sorted(name for name, stamp in after.items() if before.get(name) != stamp)
    return '{"ok": true, "value": ' + text + ', "written": ' + _json.dumps(written) + '}'
`;

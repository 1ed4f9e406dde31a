#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/) from the repository's test data.

Sources: the client captures of tests/data/client-captures (HTTP requests and their JSON bodies), the auth.json
samples of tests/data/auth, Responses SSE turns captured from the fake upstream (tests/fuzz/sse/*.sse, taken
with --capture-sse from a running tests/support/fake_upstream) plus hand-written edge cases following
PROTOCOL.md, and configuration files in the documented format. Re-running it rewrites the same files.
"""
import glob
import gzip
import json
import os
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'data')
OUT = os.path.join(HERE, 'corpus')


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def captures():
    for path in sorted(glob.glob(os.path.join(DATA, 'client-captures', '*.json'))):
        for entry in json.load(open(path)):
            yield os.path.basename(path)[:-5], entry


def request_bytes(entry, body=None, encoding=None):
    body = b'' if body is None else body
    head = '%s %s HTTP/1.1\r\n' % (entry['method'], entry['url'])
    for k, v in entry.get('headers', {}).items():
        if k in ('content-length', 'content-encoding', 'transfer-encoding'):
            continue
        head += '%s: %s\r\n' % (k, v)
    if encoding:
        head += 'Content-Encoding: %s\r\n' % encoding
    if body or entry['method'] == 'POST':
        head += 'Content-Length: %d\r\n' % len(body)
    return head.encode() + b'\r\n' + body


def http_seeds():
    n = 0
    for name, e in captures():
        if e.get('kind') not in ('http', 'upgrade'):
            continue
        body = json.dumps(e['body']).encode() if e.get('body') is not None else None
        # Alternate one write, tiny writes and large writes (the control byte, see FuzzSupport.h).
        control = bytes([(0, 7, 200)[n % 3]])
        write('http_request', '%s-%d' % (name, e['n']), control + request_bytes(e, body))
        n += 1
    post = {'method': 'POST', 'url': '/v1/responses', 'headers': {'host': '127.0.0.1:2455',
                                                                  'content-type': 'application/json'}}
    body = b'{"model":"gpt-5","input":"hi","stream":true}'
    write('http_request', 'gzip-body', b'\x00' + request_bytes(post, gzip.compress(body, mtime=0), 'gzip'))
    write('http_request', 'deflate-body', b'\x05' + request_bytes(post, zlib.compress(body), 'deflate'))
    zst = subprocess.run(['zstd', '-q', '-c'], input=body, stdout=subprocess.PIPE, check=True).stdout
    write('http_request', 'zstd-body', b'\x03' + request_bytes(post, zst, 'zstd'))
    write('http_request', 'chunked-body', b'\x02POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n'
          b'Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5\r\n{"a":\r\n3;ext=1\r\n"b"\r\n1\r\n}\r\n'
          b'0\r\nTrailer: x\r\n\r\n')
    write('http_request', 'pipelined', b'\x00GET /stream?x=1&y=%20 HTTP/1.1\r\nHost: a\r\nX-Fuzz: 1\r\n\r\n'
          b'POST /error HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcd'
          b'GET /backend-api/codex/models?client_version=0.171.0 HTTP/1.0\r\n\r\n')
    write('http_request', 'absolute-form', b'\x09GET http://127.0.0.1:2455/v1/models?a=b#frag HTTP/1.1\r\n'
          b'Host: 127.0.0.1:2455\r\nConnection: close\r\n\r\n')
    write('http_request', 'folded-header', b'\x01GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n two\r\n'
          b'Accept: a\r\nAccept: b\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n')
    write('http_request', 'too-large', b'\x00POST /v1/responses HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n')


def sse_frame(event, data):
    return 'event: %s\ndata: %s\n\n' % (event, json.dumps(data, separators=(',', ':')))


def responses_turn(kind):
    rid = 'resp_fuzz'
    resp = {'id': rid, 'object': 'response', 'created_at': 1760000000, 'status': 'in_progress', 'model': 'gpt-5',
            'output': []}
    out = [sse_frame('response.created', {'type': 'response.created', 'response': resp}),
           sse_frame('response.in_progress', {'type': 'response.in_progress', 'response': resp})]
    if kind == 'tool':
        item = {'id': 'fc_1', 'type': 'function_call', 'status': 'in_progress', 'call_id': 'call_1',
                'name': 'get_weather', 'arguments': ''}
        out.append(sse_frame('response.output_item.added', {'type': 'response.output_item.added',
                                                            'output_index': 0, 'item': item}))
        for frag in ('{"city":', '"Paris"}'):
            out.append(sse_frame('response.function_call_arguments.delta', {
                'type': 'response.function_call_arguments.delta', 'item_id': 'fc_1', 'output_index': 0,
                'delta': frag}))
        done = dict(item, status='completed', arguments='{"city":"Paris"}')
        out.append(sse_frame('response.function_call_arguments.done', {
            'type': 'response.function_call_arguments.done', 'item_id': 'fc_1', 'output_index': 0,
            'arguments': done['arguments']}))
        out.append(sse_frame('response.output_item.done', {'type': 'response.output_item.done',
                                                           'output_index': 0, 'item': done}))
        final = dict(resp, status='completed', output=[done])
    else:
        msg = {'id': 'msg_1', 'type': 'message', 'status': 'in_progress', 'role': 'assistant', 'content': []}
        out.append(sse_frame('response.output_item.added', {'type': 'response.output_item.added',
                                                            'output_index': 0, 'item': msg}))
        out.append(sse_frame('response.content_part.added', {
            'type': 'response.content_part.added', 'item_id': 'msg_1', 'output_index': 0, 'content_index': 0,
            'part': {'type': 'output_text', 'text': ''}}))
        for d in ('Hel', 'lo ', 'w\u00f6rld'):
            out.append(sse_frame('response.output_text.delta', {
                'type': 'response.output_text.delta', 'item_id': 'msg_1', 'output_index': 0,
                'content_index': 0, 'delta': d}))
        if kind == 'refusal':
            out.append(sse_frame('response.refusal.delta', {'type': 'response.refusal.delta', 'item_id': 'msg_1',
                                                            'output_index': 0, 'delta': 'no'}))
        out.append(sse_frame('response.output_text.done', {
            'type': 'response.output_text.done', 'item_id': 'msg_1', 'output_index': 0, 'content_index': 0,
            'text': 'Hello w\u00f6rld'}))
        done = dict(msg, status='completed', content=[{'type': 'output_text', 'text': 'Hello w\u00f6rld'}])
        out.append(sse_frame('response.output_item.done', {'type': 'response.output_item.done',
                                                           'output_index': 0, 'item': done}))
        final = dict(resp, status='completed', output=[])  # the backend's empty output: rebuilt by the proxy
    usage = {'input_tokens': 12, 'input_tokens_details': {'cached_tokens': 4}, 'output_tokens': 7,
             'output_tokens_details': {'reasoning_tokens': 2}, 'total_tokens': 19}
    final['usage'] = usage
    out.append(': keepalive\n\n')
    out.append(sse_frame('codex.rate_limits', {'type': 'codex.rate_limits', 'rate_limits': {
        'primary': {'used_percent': 12.5, 'window_minutes': 300, 'reset_at': 1760003600},
        'secondary': {'used_percent': 40, 'window_minutes': 10080, 'reset_at': 1760500000}}}))
    if kind == 'failed':
        final = dict(resp, status='failed', error={'code': 'server_error', 'message': 'boom'})
        out.append(sse_frame('response.failed', {'type': 'response.failed', 'response': final}))
    elif kind == 'incomplete':
        final = dict(final, status='incomplete', incomplete_details={'reason': 'max_output_tokens'})
        out.append(sse_frame('response.incomplete', {'type': 'response.incomplete', 'response': final}))
    elif kind == 'error':
        out.append(sse_frame('error', {'type': 'error', 'code': 'rate_limit_exceeded',
                                       'message': 'Rate limit reached. Please try again in 1m30s.'}))
    elif kind != 'broken':
        out.append(sse_frame('response.completed', {'type': 'response.completed', 'response': final}))
    return ''.join(out)


def stream_seeds():
    for kind in ('text', 'tool', 'refusal', 'failed', 'incomplete', 'error', 'broken'):
        turn = responses_turn(kind)
        write('translate_stream', 'turn-' + kind, turn)
        write('sse_parser', 'turn-' + kind, bytes([len(kind) * 17 % 256]) + turn.encode())
    for path in sorted(glob.glob(os.path.join(HERE, 'sse', '*.sse'))):
        name = os.path.basename(path)[:-4]
        raw = open(path, 'rb').read()
        write('translate_stream', 'fake-upstream-' + name, raw)
        write('sse_parser', 'fake-upstream-' + name, b'\x00' + raw)
    write('sse_parser', 'crlf-bom-multiline', b'\x07\xef\xbb\xbfevent: a\r\ndata: one\r\ndata: two\r\nid: 7\r\n'
          b'retry: 100\r\n\r\n: comment\r\ndata\rdata:x\r\r')
    write('sse_parser', 'unterminated', b'\x81data: {"type":"response.output_text.delta"')
    write('sse_parser', 'id-with-nul', b'\x02id: a\x00b\ndata: 1\n\nevent: e\nfield without colon\n\n')


def request_body_seeds():
    seen = set()
    for name, e in captures():
        body = e.get('body')
        if not isinstance(body, dict):
            continue
        raw = json.dumps(body, separators=(',', ':')).encode()
        if raw in seen:
            continue
        seen.add(raw)
        write('translate_request', '%s-%d' % (name, e['n']), raw)
    write('translate_request', 'codex-forwardable',
          b'{"model":"gpt-5-codex","input":[],"store":false,"stream":true,"prompt_cache_key":"s1",'
          b'"previous_response_id":"resp_1"}')
    write('translate_request', 'chat-everything', json.dumps({
        'model': 'gpt-5', 'stream': True, 'n': 1, 'max_tokens': 5, 'temperature': 0.2,
        'messages': [{'role': 'system', 'content': 'sys'}, {'role': 'developer', 'content': [{'type': 'text',
                                                                                            'text': 'dev'}]},
                     {'role': 'user', 'content': [{'type': 'text', 'text': 'hi'},
                                                  {'type': 'image_url', 'image_url': {'url': 'data:x'}}]},
                     {'role': 'assistant', 'content': None, 'tool_calls': [
                         {'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{}'}}]},
                     {'role': 'tool', 'tool_call_id': 'c1', 'content': 'ok'}],
        'tools': [{'type': 'function', 'function': {'name': 'f', 'parameters': {'type': 'object'}}}],
        'tool_choice': {'type': 'function', 'function': {'name': 'f'}},
        'response_format': {'type': 'json_schema', 'json_schema': {'name': 's', 'schema': {}, 'strict': True}},
        'reasoning_effort': 'low', 'verbosity': 'low', 'parallel_tool_calls': False,
        'prompt_cache_key': 'k'}, separators=(',', ':')))


def auth_seeds():
    for path in sorted(glob.glob(os.path.join(DATA, 'auth', '*.json')) +
                       glob.glob(os.path.join(DATA, 'auth', 'malformed', '*.json'))):
        raw = open(path, 'rb').read()
        if len(raw) < 16384:
            write('auth_json', os.path.basename(path)[:-5], raw)
    write('auth_json', 'claims-payload', json.dumps({
        'sub': 'auth0|u1', 'email': 'a@example.com', 'exp': 1760000000,
        'https://api.openai.com/auth': {'chatgpt_account_id': 'acc-1', 'chatgpt_plan_type': 'plus',
                                        'chatgpt_user_id': 'user-1'},
        'https://api.openai.com/profile': {'email': 'p@example.com'}}))
    write('auth_json', 'token-blob', b'{"access_token":"a","refresh_token":"r","id_token":"i"}')


def config_seeds():
    write('config_loader', 'empty', b'{}')
    write('config_loader', 'full', json.dumps({
        'listen': '127.0.0.1:2455', 'strategy': 'round_robin', 'max_body_mb': 64, 'backoff_max_s': 600,
        'slots_per_account': 8, 'usage_poll_interval_s': 0, 'gate_wait_s': 30, 'connect_s': 10,
        'stream_idle_s': 120, 'request_total_s': 600, 'stream_max_s': 3600, 'lease_ttl_s': 60,
        'lease_renew_s': 20, 'gate_max_waiters': 100, 'gate_max_waiters_per_account': 10, 'drain_s': 5,
        'egress_proxies': [{'name': 'p1', 'url': 'http://10.0.0.1:3128'},
                           {'name': 'p2', 'url': 'socks5h://proxy.example:1080', 'has_credentials': True}],
        'egress_pools': [{'name': 'pool', 'proxies': ['p1', 'p2'], 'strategy': 'random', 'seed': 7,
                          'request_budget_ms': 20000, 'max_attempts': 3}],
        'egress_default_pool': 'pool', 'egress_account_bindings': {'alice': 'pool'}}, indent=1))
    write('config_loader', 'bad-range', b'{"slots_per_account": 0, "listen": "[::1]:99999"}')
    write('config_loader', 'with-env', b'{"strategy":"fill_first"}\x00postgresql://user:s3cretpass@db.example:5432/sy'
          b'?sslmode=require\x00localhost:8080\x00http://127.0.0.1:9/backend-api\x00' + b'ab' * 32)
    write('config_loader', 'sqlite-url', b'{}\x00sqlite:///var/lib/switchyard/db.sqlite\x00[::1]:0')


def capture_sse(fake_bin):
    """Captures real turns from the fake upstream into tests/fuzz/sse/."""
    import urllib.request
    proc = subprocess.Popen([fake_bin, '--port', '0'], stdout=subprocess.PIPE, stdin=subprocess.PIPE)
    port = int(proc.stdout.readline().split()[1])
    base = 'http://127.0.0.1:%d' % port
    os.makedirs(os.path.join(HERE, 'sse'), exist_ok=True)

    def post(path, body, headers):
        req = urllib.request.Request(base + path, json.dumps(body).encode(), dict(
            {'Content-Type': 'application/json', 'Authorization': 'Bearer tok', 'chatgpt-account-id': 'acc-fuzz'},
            **headers))
        try:
            return urllib.request.urlopen(req, timeout=10).read()
        except urllib.error.HTTPError as e:
            return e.read()

    tools = [{'type': 'function', 'name': 'get_weather', 'parameters': {'type': 'object'}}]
    cases = {
        'text': ({'model': 'gpt-5', 'input': [{'role': 'user', 'content': 'Say hello in three words'}],
                  'stream': True, 'store': False}, None),
        'tool': ({'model': 'gpt-5', 'input': [{'role': 'user', 'content': 'CALL_TOOL weather?'}], 'tools': tools,
                  'stream': True, 'store': False}, None),
        'failed': ({'model': 'gpt-5', 'input': [{'role': 'user', 'content': 'x'}], 'stream': True}, 'failed'),
        'drop-mid': ({'model': 'gpt-5', 'input': [{'role': 'user', 'content': 'x'}], 'stream': True}, 'drop_mid'),
    }
    try:
        for name, (body, action) in cases.items():
            if action:
                post('/__control/script', {'account_id': 'acc-fuzz', 'actions': [action]}, {})
            try:
                raw = post('/backend-api/codex/responses', body, {'Accept': 'text/event-stream'})
            except Exception as e:  # drop_mid ends the body early
                raw = getattr(e, 'partial', b'')
            open(os.path.join(HERE, 'sse', name + '.sse'), 'wb').write(raw)
    finally:
        proc.kill()


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--capture-sse':
        capture_sse(sys.argv[2])
    http_seeds()
    stream_seeds()
    request_body_seeds()
    auth_seeds()
    config_seeds()

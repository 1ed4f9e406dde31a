// Cross-checks the proxy's request log against what the fake upstream received: for every request the
// account booked in our log must be the account whose token the upstream saw, matched by request id.
// Usage: node verify.mjs ACCOUNTS_JSON FAKE_BASE SWITCHYARD_BIN MIN_REQUESTS
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const [accountsFile, fakeBase, bin, minText] = process.argv.slice(2);
const accounts = JSON.parse(readFileSync(accountsFile, 'utf8'));
const byToken = new Map(accounts.map((a) => [a.access_token, a]));
const upstreamLog = await (await fetch(`${fakeBase}/__control/log`)).json();
const ourLog = JSON.parse(execFileSync(bin, ['requests', '--json', '--limit', '10000'], { encoding: 'utf8' }));

const fail = (msg) => { console.error(`verify: ${msg}`); process.exit(1); };
const turns = upstreamLog.filter((r) => r.path.endsWith('/codex/responses'));
if (turns.length < Number(minText || 1)) fail(`the upstream saw ${turns.length} turns, expected at least ${minText}`);
const ours = new Map(ourLog.map((r) => [r.request_id, r]));
let matched = 0;
for (const u of turns) {
  const account = byToken.get(u.authorization);
  if (!account) fail(`upstream request ${u.x_request_id} carried a token that belongs to no imported account`);
  if (u.chatgpt_account_id !== account.chatgpt_account_id) fail(`upstream request ${u.x_request_id}: chatgpt-account-id ${u.chatgpt_account_id} does not match its token's account ${account.chatgpt_account_id}`);
  const row = ours.get(u.x_request_id);
  if (!row) fail(`upstream request ${u.x_request_id} is missing from our request log`);
  if (row.chatgpt_account_id !== account.chatgpt_account_id) fail(`request ${row.request_id}: log books ${row.chatgpt_account_id}, upstream was called with ${account.chatgpt_account_id}`);
  const last = row.attempts[row.attempts.length - 1];
  if (!last || last.account_id !== row.account_id) fail(`request ${row.request_id}: last attempt is not on the booked account`);
  matched++;
}
for (const row of ourLog) {
  if (row.status === 'completed' && row.route.includes('responses') || row.route.includes('chat/completions')) {
    if (row.status === 'completed' && row.tokens.total === null) fail(`request ${row.request_id} completed without token usage`);
  }
}
console.log(`verify: ${matched} upstream turns matched to our request log by request id and account`);

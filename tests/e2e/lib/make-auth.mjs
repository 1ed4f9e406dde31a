// Writes Codex CLI auth.json files for fake accounts (the tokens are fake JWTs; the fake upstream accepts any
// bearer token and records it). Usage: node make-auth.mjs DIR N  -> prints a JSON array describing the accounts.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

const b64url = (obj) => Buffer.from(JSON.stringify(obj)).toString('base64url');
const jwt = (payload) => `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(payload)}.${randomBytes(8).toString('base64url')}`;

const [dir, countText] = process.argv.slice(2);
const count = Number(countText || 3);
mkdirSync(dir, { recursive: true });
const plans = ['plus', 'pro', 'team'];
const accounts = [];
const exp = Math.floor(Date.now() / 1000) + 10 * 24 * 3600;
for (let i = 1; i <= count; i++) {
  const chatgptAccountId = `acct-e2e-${i}-${randomBytes(3).toString('hex')}`;
  const userId = `user-e2e-${i}`;
  const email = `e2e${i}@example.test`;
  const auth = { 'https://api.openai.com/auth': { chatgpt_account_id: chatgptAccountId, chatgpt_plan_type: plans[(i - 1) % plans.length], chatgpt_user_id: userId, user_id: userId } };
  const accessToken = jwt({ sub: userId, exp, ...auth, marker: `access-${i}-${randomBytes(6).toString('hex')}` });
  const idToken = jwt({ sub: userId, email, exp, ...auth });
  const refreshToken = `rt_e2e_${i}_${randomBytes(12).toString('hex')}`;
  const file = join(dir, `auth-${i}.json`);
  writeFileSync(file, JSON.stringify({ OPENAI_API_KEY: null, tokens: { id_token: idToken, access_token: accessToken, refresh_token: refreshToken, account_id: chatgptAccountId }, last_refresh: new Date().toISOString() }, null, 2));
  accounts.push({ file, alias: `e2e${i}`, chatgpt_account_id: chatgptAccountId, access_token: accessToken, refresh_token: refreshToken, email });
}
process.stdout.write(JSON.stringify(accounts, null, 2) + '\n');

#!/usr/bin/env python3
"""Writes the auth.json fixtures in this directory (Codex CLI format, PROTOCOL.md "Accounts: OAuth and
auth.json"). Every token is fake: unsigned JWTs with a fixed filler signature, and made-up refresh tokens.
Deterministic, so re-running it reproduces the committed files byte for byte:  python3 generate.py
"""
import base64
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
EXP = 1893456000  # 2030-01-01T00:00:00Z
AUTH = "https://api.openai.com/auth"


def b64url(obj):
    raw = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwt(payload, sig):
    return "%s.%s.%s" % (b64url({"alg": "RS256", "typ": "JWT"}), b64url(payload), sig)


def id_token(sub, email, claim, sig, exp=EXP, profile_email=None):
    payload = {"sub": sub, "exp": exp, "iat": exp - 864000, AUTH: claim}
    if email:
        payload["email"] = email
    if profile_email:
        payload["https://api.openai.com/profile"] = {"email": profile_email}
    return jwt(payload, sig)


def auth_json(idt, access, refresh, account_id, last_refresh="2026-11-29T10:00:00.123456Z"):
    tokens = {"id_token": idt, "access_token": access, "refresh_token": refresh}
    if account_id is not None:
        tokens["account_id"] = account_id
    return {"OPENAI_API_KEY": None, "tokens": tokens, "last_refresh": last_refresh}


def write(name, obj=None, text=None):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        f.write(text if text is not None else json.dumps(obj, indent=2) + "\n")


WS_PERSONAL = "11111111-aaaa-4aaa-8aaa-000000000001"
WS_TEAM = "22222222-bbbb-4bbb-8bbb-000000000002"


def claim(ws, plan, user):
    c = {"chatgpt_account_id": ws, "chatgpt_plan_type": plan}
    if user:
        c["chatgpt_user_id"] = user
        c["user_id"] = user
    return c


def access(user, ws, sig):
    return jwt({"sub": user, "exp": EXP + 3600, AUTH: {"chatgpt_account_id": ws}}, sig)


def main():
    alice_personal = auth_json(
        id_token("auth0|alice", "alice@example.test", claim(WS_PERSONAL, "plus", "user-alice"), "SIGidAlicePersonal01"),
        access("user-alice", WS_PERSONAL, "SIGacAlicePersonal01"), "rt_fake_alice_personal_0123456789", WS_PERSONAL)
    write("personal-alice.json", alice_personal)
    write("team-alice.json", auth_json(
        id_token("auth0|alice", "alice@example.test", claim(WS_TEAM, "team", "user-alice"), "SIGidAliceTeam000002"),
        access("user-alice", WS_TEAM, "SIGacAliceTeam000002"), "rt_fake_alice_team_9876543210", WS_TEAM))
    write("team-bob.json", auth_json(
        id_token("auth0|bob", "bob@example.test", claim(WS_TEAM, "team", "user-bob"), "SIGidBobTeam00000003"),
        access("user-bob", WS_TEAM, "SIGacBobTeam00000003"), "rt_fake_bob_team_5555555555", WS_TEAM))
    # No user id in the auth claim (falls back to sub), email only in the profile claim, no tokens.account_id,
    # an opaque (non-JWT) access token and no last_refresh.
    carol = auth_json(
        id_token("auth0|carol", None, claim(WS_PERSONAL.replace("1111", "3333"), "pro", None), "SIGidCarol0000000004",
                 profile_email="carol@example.test"),
        "opaque-access-token-carol-abcdef0123", "rt_fake_carol_0000000004", None)
    del carol["last_refresh"]
    write("sub-only-carol.json", carol)

    m = "malformed/"
    text = json.dumps(alice_personal, indent=2)
    write(m + "truncated.json", text=text[: len(text) // 2])
    write(m + "not-an-object.json", text='["%s"]\n' % alice_personal["tokens"]["refresh_token"])
    write(m + "api-key-only.json", {"OPENAI_API_KEY": "sk-fake-apikey-0123456789abcdef", "tokens": None})
    tokens_string = dict(alice_personal, tokens=alice_personal["tokens"]["id_token"])
    write(m + "tokens-not-object.json", tokens_string)
    for field in ("id_token", "access_token", "refresh_token"):
        broken = json.loads(json.dumps(alice_personal))
        del broken["tokens"][field]
        write(m + "missing-%s.json" % field.replace("_", "-"), broken)
    wrong_type = json.loads(json.dumps(alice_personal))
    wrong_type["tokens"]["access_token"] = 1234567890123
    write(m + "access-token-number.json", wrong_type)
    empty = json.loads(json.dumps(alice_personal))
    empty["tokens"]["refresh_token"] = "   "
    write(m + "refresh-token-blank.json", empty)
    not_jwt = json.loads(json.dumps(alice_personal))
    not_jwt["tokens"]["id_token"] = "idtoken-secret-without-dots-0123456789"
    write(m + "id-token-not-jwt.json", not_jwt)
    bad_b64 = json.loads(json.dumps(alice_personal))
    bad_b64["tokens"]["id_token"] = "eyJhbGciOiJub25lIn0.@@not*base64url@@.SIGbadBase64Payload5"
    write(m + "id-token-bad-base64.json", bad_b64)
    not_object = json.loads(json.dumps(alice_personal))
    not_object["tokens"]["id_token"] = "eyJhbGciOiJub25lIn0.%s.SIGpayloadIsAnArray6" % (
        base64.urlsafe_b64encode(b'["secret-array-payload"]').rstrip(b"=").decode())
    write(m + "id-token-payload-array.json", not_object)
    mismatch = json.loads(json.dumps(alice_personal))
    mismatch["tokens"]["account_id"] = WS_TEAM
    write(m + "account-id-mismatch.json", mismatch)
    no_account = auth_json(
        id_token("auth0|dave", "dave@example.test", {"chatgpt_plan_type": "plus", "chatgpt_user_id": "user-dave"},
                 "SIGidDaveNoAccount07"),
        access("user-dave", "", "SIGacDaveNoAccount07"), "rt_fake_dave_0000000007", None)
    write(m + "no-account-id.json", no_account)
    no_user = auth_json(jwt({"exp": EXP, AUTH: {"chatgpt_account_id": WS_PERSONAL}}, "SIGidNoUser000000008"),
                        access("", WS_PERSONAL, "SIGacNoUser000000008"), "rt_fake_nouser_0000000008", WS_PERSONAL)
    write(m + "no-user-id.json", no_user)


if __name__ == "__main__":
    main()

// passkey.js: the browser side of the passkey server's JSON API, as one dependency-free ES module. The gateway
// serves it at /passkey/v1/passkey.js (types: /passkey/v1/passkey.d.ts); an app may also vendor the two files.
// Version 1: what it exports keeps its meaning for as long as the path says v1.
//
//   import { PasskeyClient } from "https://auth.example.com/passkey/v1/passkey.js";
//   const passkeys = new PasskeyClient({ baseURL: "https://auth.example.com" });
//   const session = await passkeys.signIn();

/** The module's version: the `v1` of its path. */
export const version = "1";

/** A refusal by the server: its HTTP status and problem document (`code`, `reason`, `title`, `detail`). */
export class PasskeyProblem extends Error {
  constructor(problem) {
    super(problem.detail || problem.title || problem.code || `HTTP ${problem.status}`);
    this.name = "PasskeyProblem";
    this.status = problem.status;
    this.code = problem.code;
    this.reason = problem.reason;
    this.problem = problem;
  }
}

// --- base64url and the WebAuthn JSON forms -------------------------------------------------------------------

/** Bytes as unpadded base64url. */
export function toBase64URL(buffer) {
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** base64url (padded or not) as an ArrayBuffer; throws a TypeError on anything else. */
export function fromBase64URL(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*={0,2}$/.test(text)) throw new TypeError("not base64url");
  const unpadded = text.replace(/=+$/, "");
  const binary = atob(unpadded.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((unpadded.length + 3) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}

function hasWebAuthn() {
  return typeof window !== "undefined" && typeof window.PublicKeyCredential === "function";
}

/** Creation options from their JSON form: the browser's own parser where it has one, else decoded here. */
export function creationOptions(json) {
  if (hasWebAuthn() && typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function") {
    return PublicKeyCredential.parseCreationOptionsFromJSON(json);
  }
  return {
    ...json,
    challenge: fromBase64URL(json.challenge),
    user: { ...json.user, id: fromBase64URL(json.user.id) },
    excludeCredentials: (json.excludeCredentials || []).map((c) => ({ ...c, id: fromBase64URL(c.id) })),
  };
}

/** Request options from their JSON form: the browser's own parser where it has one, else decoded here. */
export function requestOptions(json) {
  if (hasWebAuthn() && typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function") {
    return PublicKeyCredential.parseRequestOptionsFromJSON(json);
  }
  return {
    ...json,
    challenge: fromBase64URL(json.challenge),
    allowCredentials: (json.allowCredentials || []).map((c) => ({ ...c, id: fromBase64URL(c.id) })),
  };
}

/** A credential in its JSON form (`PublicKeyCredential.toJSON()`), written here where the browser lacks it. */
export function credentialJSON(credential) {
  if (typeof credential.toJSON === "function") return credential.toJSON();
  const response = credential.response;
  const json = {
    id: credential.id,
    rawId: toBase64URL(credential.rawId),
    type: credential.type,
    authenticatorAttachment: credential.authenticatorAttachment || undefined,
    clientExtensionResults: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
    response: { clientDataJSON: toBase64URL(response.clientDataJSON) },
  };
  if (response.attestationObject) {
    json.response.attestationObject = toBase64URL(response.attestationObject);
    json.response.transports = response.getTransports ? response.getTransports() : [];
  } else {
    json.response.authenticatorData = toBase64URL(response.authenticatorData);
    json.response.signature = toBase64URL(response.signature);
    if (response.userHandle) json.response.userHandle = toBase64URL(response.userHandle);
  }
  return json;
}

/**
 * What this browser can do: `getClientCapabilities()` where it exists, else what can be asked one by one
 * (`conditionalGet`); `{}` without WebAuthn.
 */
export async function capabilities() {
  if (!hasWebAuthn()) return {};
  if (typeof PublicKeyCredential.getClientCapabilities === "function") {
    try { return await PublicKeyCredential.getClientCapabilities(); } catch { return {}; }
  }
  const conditionalGet = typeof PublicKeyCredential.isConditionalMediationAvailable === "function"
    ? await PublicKeyCredential.isConditionalMediationAvailable().catch(() => false) : false;
  return { conditionalGet };
}

// --- Signal API (WebAuthn Level 3 §5.1.10) -----------------------------------------------------------------

/**
 * Calls `PublicKeyCredential[name](options)` if the browser has it, without waiting for it: a provider that is slow
 * or refuses holds up nothing. Returns whether it was called.
 */
export function signal(name, options) {
  if (!hasWebAuthn() || typeof PublicKeyCredential[name] !== "function") return false;
  try {
    Promise.resolve(PublicKeyCredential[name](options)).catch(() => {});
    return true;
  } catch {
    return false;
  }
}

/** Whether `error` is the server saying the credential is not registered: the only failure that may make a browser forget a passkey. */
export function isUnknownCredential(error) {
  return error instanceof PasskeyProblem && error.code === "invalid_credentials" && error.reason === "unknown_credential";
}

/** Tells the provider the account's passkeys are exactly those of `list` (a `GET /v1/passkeys` answer). */
export function signalAcceptedCredentials(list) {
  return signal("signalAllAcceptedCredentials", {
    rpId: list.rpID,
    userId: list.userHandle,
    allAcceptedCredentialIds: list.passkeys.map((passkey) => passkey.credentialID),
  });
}

/** Tells the provider the account's current names (an account from `GET /v1/account`, `rpID` from the passkey list). */
export function signalUserDetails(account, rpID) {
  return signal("signalCurrentUserDetails", {
    rpId: rpID,
    userId: account.userHandle,
    name: account.userName,
    displayName: account.displayName,
  });
}

// --- the client --------------------------------------------------------------------------------------------

/**
 * The passkey server's API from a page: sign-up, sign-in (modal or autofill), adding a passkey (by a button or by
 * automatic upgrade), removing and renaming with the matching signals, and every other call with the session's
 * access token, refreshed before it expires and once more when the server refuses it.
 *
 * The tokens live in this object only, never in web storage. With the gateway's refresh cookie
 * (`PASSKEY_REFRESH_COOKIE`) the refresh token is an HttpOnly cookie instead, and `resume()` trades it for a new
 * access token after a reload.
 */
export class PasskeyClient {
  /**
   * @param {object} [options]
   * @param {string} [options.baseURL] the gateway's origin (default: this page's); another origin needs
   *   `PASSKEY_CORS_ORIGINS` on the gateway and this page's origin in `PASSKEY_ORIGINS`.
   * @param {(session: object|null) => void} [options.onSessionChange] told of every new, refreshed or ended session.
   * @param {typeof fetch} [options.fetch] the fetch to use (default: the page's).
   */
  constructor(options = {}) {
    this.baseURL = (options.baseURL || "").replace(/\/+$/, "");
    this.onSessionChange = options.onSessionChange || (() => {});
    this.fetch = options.fetch || ((...args) => fetch(...args));
    /** The session's tokens; `expiresAt` is counted on this browser's clock from the session's `expiresIn`. */
    this.tokens = { access: null, refresh: null, cookie: false, expiresAt: 0, lifetime: 0 };
    this.refreshing = null;
    this.autofill = null;
  }

  /** Whether a session is held. */
  get signedIn() { return Boolean(this.tokens.access); }

  /** Holds the tokens of a session answer (sign-in, sign-up, refresh). */
  keepSession(session) {
    const tokens = this.tokens;
    tokens.access = session.accessToken;
    tokens.refresh = session.refreshToken || null;
    // No refresh token but a refresh expiry: cookie mode. Neither: an opaque token, which is never refreshed.
    tokens.cookie = !session.refreshToken && Boolean(session.refreshTokenExpiresAt);
    tokens.lifetime = Math.max(0, session.expiresIn || 0) * 1000;
    tokens.expiresAt = Date.now() + tokens.lifetime;
    this.onSessionChange(session);
  }

  /** Drops the tokens (the server's session is untouched: `signOut()` ends it). */
  forgetSession() {
    Object.assign(this.tokens, { access: null, refresh: null, cookie: false, expiresAt: 0, lifetime: 0 });
    this.onSessionChange(null);
  }

  get canRefresh() { return Boolean(this.tokens.refresh) || this.tokens.cookie; }

  // Refreshed a minute before expiry, or in the second half of a shorter life.
  get refreshDue() {
    const tokens = this.tokens;
    if (!tokens.access || !this.canRefresh) return false;
    return Date.now() >= tokens.expiresAt - Math.min(60000, tokens.lifetime / 2);
  }

  /**
   * `POST /v1/session/refresh` with the refresh token, or in cookie mode with the cookie. One refresh at a time:
   * a refresh token is single-use, so every caller waits for the one under way. A 401 ends the session.
   */
  refresh() {
    if (!this.refreshing) {
      this.refreshing = (async () => {
        const body = this.tokens.refresh ? { refreshToken: this.tokens.refresh } : {};
        const response = await this.fetch(this.baseURL + "/v1/session/refresh", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(body),
          credentials: "include",
        });
        const data = await response.json().catch(() => ({}));
        if (!response.ok) {
          if (response.status === 401) this.forgetSession();
          throw new PasskeyProblem({ status: response.status, ...data });
        }
        this.keepSession(data);
        return data;
      })().finally(() => { this.refreshing = null; });
    }
    return this.refreshing;
  }

  /** After a reload in cookie mode: a new access token from the refresh cookie, or null when it holds none. */
  async resume() {
    this.tokens.cookie = true;
    try {
      return await this.refresh();
    } catch {
      this.forgetSession();
      return null;
    }
  }

  /**
   * One call to the API: `method path` with `body` as JSON, the access token if any. Answers the JSON document
   * (null for 204); a refusal throws `PasskeyProblem`. A token near its end is refreshed first; a token the server
   * refuses is refreshed and the call made once more.
   */
  async call(method, path, body, retried = false) {
    if (this.refreshDue) {
      try {
        await this.refresh();
      } catch (error) {
        // Without an answer the access token still serves until it expires; a refused refresh ends the session.
        if (!this.tokens.access || Date.now() >= this.tokens.expiresAt) throw error;
      }
    }
    const headers = {};
    const token = this.tokens.access;
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await this.fetch(this.baseURL + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 204) return null;
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      if (response.status === 401 && data.code === "unauthenticated" && token) {
        // One refresh and one retry for a refused access token (unless a refresh replaced it meanwhile).
        if (!retried && this.tokens.access && this.tokens.access !== token) return this.call(method, path, body, true);
        if (!retried && token === this.tokens.access && this.canRefresh) {
          await this.refresh();
          return this.call(method, path, body, true);
        }
        if (token === this.tokens.access) this.forgetSession();
      }
      throw new PasskeyProblem({ status: response.status, ...data });
    }
    return data;
  }

  /**
   * Signs in with a passkey (discoverable: the user picks one). `mediation: "conditional"` is the autofill request
   * that `startAutofill` makes. A credential the server does not know is signalled to the provider
   * (`signalUnknownCredential`), which may then hide it. Answers the session.
   */
  async signIn({ mediation, signal: abortSignal } = {}) {
    const start = await this.call("POST", "/v1/passkeys/authentications", {});
    const options = { publicKey: requestOptions(start.publicKey) };
    if (mediation) options.mediation = mediation;
    if (abortSignal) options.signal = abortSignal;
    const credential = await navigator.credentials.get(options);
    let session;
    try {
      session = await this.call("POST", "/v1/passkeys/authentications/finish", {
        challengeID: start.challengeID,
        credential: credentialJSON(credential),
      });
    } catch (error) {
      if (isUnknownCredential(error)) {
        signal("signalUnknownCredential", { rpId: start.publicKey.rpId, credentialId: credential.id });
      }
      throw error;
    }
    this.keepSession(session);
    return session;
  }

  /**
   * Starts the autofill sign-in on the page's `autocomplete="username webauthn"` field, when the browser has
   * conditional mediation; answers false otherwise. `onSession` gets the session when the user picks a passkey,
   * `onError` any failure but the user's (an abort or a dismissal). `stopAutofill()` ends it (a modal ceremony must).
   */
  async startAutofill(onSession, onError = () => {}) {
    this.stopAutofill();
    const caps = await capabilities();
    if (!caps.conditionalGet) return false;
    const controller = new AbortController();
    this.autofill = controller;
    this.signIn({ mediation: "conditional", signal: controller.signal }).then(
      (session) => { if (this.autofill === controller) this.autofill = null; onSession(session); },
      (error) => {
        if (this.autofill === controller) this.autofill = null;
        if (error.name !== "AbortError" && error.name !== "NotAllowedError") onError(error);
      });
    return true;
  }

  /** Ends the autofill sign-in, if one is waiting. */
  stopAutofill() {
    if (this.autofill) {
      this.autofill.abort();
      this.autofill = null;
    }
  }

  /** Creates an account with a passkey; the finish signs it in. Answers the session. */
  async signUp({ email, displayName }) {
    const start = await this.call("POST", "/v1/passkeys/account-registrations", { email, displayName });
    this.stopAutofill();
    const credential = await navigator.credentials.create({ publicKey: creationOptions(start.publicKey) });
    const session = await this.call("POST", "/v1/passkeys/account-registrations/finish", {
      registrationID: start.registrationID,
      email,
      displayName,
      credential: credentialJSON(credential),
    });
    this.keepSession(session);
    return session;
  }

  /**
   * Adds a passkey to the signed-in account. `mode: "conditional"` is the automatic upgrade (conditional create),
   * granted only to a session that signed in with a password moments ago.
   */
  async addPasskey({ mode = "modal" } = {}) {
    const start = await this.call("POST", "/v1/passkeys/registrations", { mode });
    this.stopAutofill();
    const options = { publicKey: creationOptions(start.publicKey) };
    if (mode === "conditional") options.mediation = "conditional";
    const credential = await navigator.credentials.create(options);
    await this.call("POST", "/v1/passkeys/registrations/finish", {
      challengeID: start.challengeID,
      credential: credentialJSON(credential),
    });
  }

  /**
   * After a password sign-in: adds a passkey without a prompt where the browser supports conditional create.
   * Answers whether one was added; failing quietly is the expected outcome everywhere else.
   */
  async upgrade() {
    const caps = await capabilities();
    if (!caps.conditionalCreate) return false;
    try {
      await this.addPasskey({ mode: "conditional" });
      return true;
    } catch {
      return false;
    }
  }

  /**
   * A fresh sign-in bound to this session, for the changes that need one (403 `reauthentication_required`): with a
   * passkey of the account by default, or with `password`. The session keeps its tokens; its sign-in time is now.
   */
  async reauthenticate({ password } = {}) {
    if (password !== undefined) {
      await this.call("POST", "/v1/session/reauthentication/password", { password });
      return;
    }
    const start = await this.call("POST", "/v1/passkeys/authentications", {});
    this.stopAutofill();
    const credential = await navigator.credentials.get({ publicKey: requestOptions(start.publicKey) });
    await this.call("POST", "/v1/session/reauthentication/passkey", {
      challengeID: start.challengeID,
      credential: credentialJSON(credential),
    });
  }

  /** Sets or changes the account's password; the account's other sessions end. Answers `{replaced, sessionsRevoked}`. */
  setPassword(password) { return this.call("POST", "/v1/account/password", { password }); }

  /** The account's passkeys (`GET /v1/passkeys`). */
  passkeys() { return this.call("GET", "/v1/passkeys"); }

  /** Removes a passkey and tells the provider which passkeys the account still accepts. Answers the list left. */
  async removePasskey(credentialID) {
    await this.call("DELETE", `/v1/passkeys/${encodeURIComponent(credentialID)}`);
    const list = await this.passkeys();
    signalAcceptedCredentials(list);
    return list;
  }

  /** Renames a passkey (the name is this server's; providers keep their own). Answers the passkey. */
  renamePasskey(credentialID, name) {
    return this.call("PATCH", `/v1/passkeys/${encodeURIComponent(credentialID)}`, { name });
  }

  /** Changes the account's display name and tells the provider. Answers the account. */
  async renameAccount(displayName) {
    const account = await this.call("PATCH", "/v1/account", { displayName });
    const list = await this.passkeys();
    signalUserDetails(account, list.rpID);
    return account;
  }

  /** Ends the session on the server and drops its tokens. */
  async signOut() {
    try {
      await this.call("DELETE", "/v1/session");
    } finally {
      this.forgetSession();
    }
  }
}

// The demo page: every flow of the gateway's JSON API, through the gateway's web module (passkey.js) and the
// browser's WebAuthn API.
import {
  PasskeyClient, signalAcceptedCredentials, signalUserDetails,
} from "/passkey/v1/passkey.js";
import { showRecoveryCard } from "/recovery.js";

// The session's tokens live in the client's memory only, never in web storage: a reload signs out, unless the
// gateway keeps the refresh token in an HttpOnly cookie (cookie mode, PASSKEY_REFRESH_COOKIE), which a reload then
// trades for a new access token.
const client = new PasskeyClient({
  onSessionChange(session) {
    if (session && client.tokens.cookie) localStorage.setItem(cookieModeKey, "1");
    else localStorage.removeItem(cookieModeKey);
  },
});
// Not a secret: whether the last session was in cookie mode, so that a reload knows to try the cookie.
const cookieModeKey = "passkey-demo.refreshCookie";
// What the signed-in view last loaded: { account, passkeys } (the Signal API calls name the account from it).
let signedIn = null;

const messages = {
  invalid_request: "Some of what was sent is missing or malformed.",
  verification_failed: "The passkey could not be verified.",
  unauthenticated: "Your session has ended. Please sign in again.",
  invalid_credentials: "Those sign-in details are not right.",
  forbidden: "That is not allowed for this session.",
  not_found: "That no longer exists.",
  email_taken: "An account with that email already exists. Sign in instead.",
  credential_already_registered: "This passkey is already registered.",
  last_sign_in_method: "This is your only way to sign in, so it cannot be removed.",
  challenge_unavailable: "That request expired or was already used. Please try again.",
  payload_too_large: "That request is too large.",
  unsupported_media_type: "The request was not sent as JSON.",
  rate_limited: "Too many attempts. Please wait a moment and try again.",
  unavailable: "The service is unavailable right now. Please try again shortly.",
  invalid_code: "That code did not work: it may be wrong, expired or used. Ask for a new one and try again.",
  reauthentication_required: "Please confirm it is you first.",
  weak_password: "That password is too easy to guess. Please choose another.",
};

const reasons = {
  unknown_credential: "This passkey is not registered here any more; your browser was told to forget it.",
  password_too_common: "That password is one of the most common ones. Please choose another.",
};

// --- status line -------------------------------------------------------------------------------------------

function announce(text, isError = false) {
  const status = document.getElementById("status");
  status.hidden = false;
  status.classList.toggle("error", isError);
  status.textContent = text;
}

// Why a password cannot go yet (the `reason` of last_sign_in_method on DELETE /v1/account/password).
const passwordRemovalReasons = {
  no_passkey: "Add a passkey before removing your password.",
  passkey_sign_in_required: "Sign in with your passkey once before removing your password.",
};

function describe(error) {
  if (error && error.problem && passwordRemovalReasons[error.problem.reason]) {
    return passwordRemovalReasons[error.problem.reason];
  }
  if (error && error.problem) {
    if (reasons[error.problem.reason]) return reasons[error.problem.reason];
    const base = messages[error.problem.code] || error.problem.title || "Something went wrong.";
    return error.problem.reason ? `${base} (${error.problem.reason})` : base;
  }
  if (error && error.name === "NotAllowedError") return "The passkey prompt was dismissed or timed out.";
  if (error && error.name === "InvalidStateError") return "This device already has a passkey for this account.";
  if (error && error.name === "AbortError") return "The passkey request was cancelled.";
  if (error && error.name === "SecurityError") {
    return "Passkeys need this page's address to match the relying party ID: open the page by its domain name.";
  }
  return (error && error.message) || "Something went wrong.";
}

// --- API ---------------------------------------------------------------------------------------------------

// One call with the session's token, refreshed as it needs (passkey.js); a refusal throws PasskeyProblem.
function api(method, path, body) {
  return client.call(method, path, body);
}

// --- flows -------------------------------------------------------------------------------------------------

async function signInWithSession(session, message) {
  client.keepSession(session);
  client.stopAutofill();
  const { passkeys } = await showAccount();
  signalAcceptedCredentials(passkeys);
  announce(message);
  openSection();
}

// The page's sections that /.well-known/passkey-endpoints names: /passkeys/enroll and /passkeys/manage.
function pageSection() {
  if (location.pathname === "/passkeys/enroll") return "enroll";
  if (location.pathname === "/passkeys/manage") return "manage";
  return null;
}

function openSection() {
  const section = pageSection();
  const signedInView = !document.getElementById("signed-in").hidden;
  const hint = document.getElementById("section-hint");
  hint.hidden = signedInView || !section;
  hint.textContent = section === "enroll" ? "Sign in to add a passkey to your account."
    : section === "manage" ? "Sign in to manage your passkeys." : "";
  if (!signedInView) return;
  if (section === "enroll") {
    document.getElementById("add-passkey").focus();
    announce("Add a passkey to your account: choose “Add a passkey”.");
  } else if (section === "manage") {
    const title = document.getElementById("passkeys-title");
    title.scrollIntoView({ block: "start" });
    title.focus();
  } else {
    document.getElementById("signed-in-title").focus();
  }
}

async function passkeySignIn() {
  const session = await client.signIn();
  await signInWithSession(session, `Signed in with a passkey as ${session.displayName}.`);
}

// The autofill sign-in on the username field (conditional mediation), where the browser has it. A failure other
// than the user's asking for nothing is said; whatever the page said last (that a session ended, say) stays
// otherwise.
function startConditionalSignIn() {
  client.startAutofill(
    (session) => run(() => signInWithSession(session, `Signed in with a passkey as ${session.displayName}.`)),
    (error) => announce(describe(error), true),
  );
}

async function createPasskeyAccount(email, displayName) {
  // The finish creates the account and signs it in: its answer is the new session, so one ceremony is enough.
  const session = await client.signUp({ email, displayName });
  await signInWithSession(session, `Account created. Signed in with your new passkey as ${session.displayName}.`);
}

// After a password sign-in, browsers that support conditional create may add a passkey without a prompt
// (Automatic Passkey Upgrade). Failing quietly is the expected outcome everywhere else.
async function tryAutomaticUpgrade() {
  if (!(await client.upgrade())) return;
  announce("A passkey was added to your account. Next time, sign in with it.");
  await showAccount();
}

// --- signed-in view ----------------------------------------------------------------------------------------

function formatTime(value) {
  return value ? new Date(value).toLocaleString() : "never";
}

function providerIcon(passkey) {
  if (!passkey.providerIconLight && !passkey.providerIconDark) return null;
  const picture = document.createElement("picture");
  if (passkey.providerIconDark) {
    const dark = document.createElement("source");
    dark.media = "(prefers-color-scheme: dark)";
    dark.srcset = passkey.providerIconDark;
    picture.append(dark);
  }
  const image = document.createElement("img");
  image.src = passkey.providerIconLight || passkey.providerIconDark;
  image.alt = "";
  image.width = 24;
  image.height = 24;
  image.className = "provider-icon";
  picture.append(image);
  return picture;
}

function row(list, label, meta, buttons, icon = null) {
  const item = document.createElement("li");
  const text = document.createElement("div");
  const title = document.createElement("div");
  if (icon) title.append(icon, " ");
  title.append(label);
  const details = document.createElement("div");
  details.className = "meta";
  details.textContent = meta;
  text.append(title, details);
  const actions = document.createElement("div");
  actions.className = "actions";
  for (const button of buttons) actions.append(button);
  item.append(text, actions);
  list.append(item);
}

function button(text, label, handler, className = "secondary") {
  const element = document.createElement("button");
  element.type = "button";
  element.className = className;
  element.textContent = text;
  element.setAttribute("aria-label", label);
  element.addEventListener("click", () => run(handler));
  return element;
}

async function showAccount() {
  const [session, account, passkeys, sessions] = await Promise.all([
    api("GET", "/v1/session"),
    api("GET", "/v1/account"),
    api("GET", "/v1/passkeys"),
    api("GET", "/v1/sessions"),
  ]);
  document.getElementById("signed-out").hidden = true;
  document.getElementById("signed-in").hidden = false;

  const who = document.getElementById("who");
  who.replaceChildren();
  for (const [term, value] of [
    ["Name", account.displayName],
    ["Email", account.emails.join(", ")],
    ["Signed in with", session.authenticationMethod],
    ["Password", account.hasPassword ? "yes" : "no"],
    ["Passkeys", String(account.passkeyCount)],
  ]) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    who.append(dt, dd);
  }

  document.getElementById("display-name").value = account.displayName;

  const list = document.getElementById("passkeys");
  list.replaceChildren();
  document.getElementById("no-passkeys").hidden = passkeys.passkeys.length > 0;
  for (const passkey of passkeys.passkeys) {
    const synced = passkey.backedUp ? "synced" : "this device only";
    const provider = passkey.providerName ? `${passkey.providerName} · ` : "";
    row(list, passkey.name, `${provider}Added ${formatTime(passkey.createdAt)} · last used ${formatTime(passkey.lastUsedAt)} · ${synced}`, [
      button("Rename", `Rename passkey ${passkey.name}`, async () => {
        const name = prompt("New name for this passkey", passkey.name);
        if (name === null) return;
        await api("PATCH", `/v1/passkeys/${passkey.credentialID}`, { name });
        await showAccount();
        announce(`Passkey renamed to ${name.trim()}.`);
      }),
      button("Remove", `Remove passkey ${passkey.name}`, async () => {
        if (!confirm(`Remove the passkey "${passkey.name}"?`)) return;
        await client.removePasskey(passkey.credentialID);
        await showAccount();
        announce(`Passkey ${passkey.name} removed.`);
      }, "danger"),
    ], providerIcon(passkey));
  }

  document.getElementById("remove-password").hidden = !(account.hasPassword && account.passkeyCount > 0);
  document.getElementById("password-form-title").textContent = account.hasPassword ? "Change your password" : "Set a password";
  document.getElementById("password-status").textContent = !account.hasPassword
    ? "You sign in with passkeys only."
    : account.passkeyCount > 0
      ? "Once you have signed in with a passkey, you can remove your password."
      : "";

  showRecoveryCard(account);

  const sessionList = document.getElementById("sessions");
  sessionList.replaceChildren();
  for (const item of sessions.sessions) {
    const label = `${item.authenticationMethod} sign-in${item.current ? " (this session)" : ""}`;
    const buttons = item.current ? [] : [
      button("Revoke", `Revoke ${item.authenticationMethod} session from ${formatTime(item.createdAt)}`, async () => {
        await api("DELETE", `/v1/sessions/${item.sessionID}`);
        await showAccount();
        announce("Session revoked.");
      }, "danger"),
    ];
    row(sessionList, label, `Started ${formatTime(item.createdAt)} · expires ${formatTime(item.expiresAt)}`, buttons);
  }
  signedIn = { account, passkeys };
  return signedIn;
}

async function renameAccount(displayName) {
  const account = await api("PATCH", "/v1/account", { displayName });
  const { passkeys } = await showAccount();
  signalUserDetails(account, passkeys.rpID);
  announce(`Your name is now ${account.displayName}.`);
}

// Passkeys are bound to the relying party ID, a domain name: a page opened on an IP address (http://127.0.0.1:8080/)
// can never use them. Say so, and where to go instead.
function isIPAddress(hostname) {
  return /^[0-9]+(\.[0-9]+){3}$/.test(hostname) || hostname.startsWith("[") || hostname.includes(":");
}

function explainAddress() {
  if (!isIPAddress(location.hostname)) return;
  const suggestion = `${location.protocol}//localhost${location.port ? `:${location.port}` : ""}${location.pathname}`;
  const link = Object.assign(document.createElement("a"), { href: suggestion, textContent: suggestion });
  const warning = document.getElementById("address-warning");
  warning.replaceChildren(
    `This page is open on the IP address ${location.hostname}, where passkeys cannot work: the page's address must `
      + "match the relying party ID (PASSKEY_RP_ID), which is a domain name. Open ",
    link,
    " instead (with the default relying party ID, localhost).",
  );
  warning.hidden = false;
}

function showSignedOut() {
  signedIn = null;
  document.getElementById("signed-in").hidden = true;
  document.getElementById("signed-out").hidden = false;
  startConditionalSignIn();
}

// --- wiring ------------------------------------------------------------------------------------------------

// A sensitive change by a session signed in too long ago (403 reauthentication_required): confirm with a passkey
// (or, where the account has none, the password), then try the change once more.
async function confirmingIdentity(action) {
  try {
    return await action();
  } catch (error) {
    if (!error.problem || error.problem.code !== "reauthentication_required") throw error;
    announce("Please confirm it is you to make this change.");
    if (signedIn && signedIn.account.passkeyCount > 0) {
      await client.reauthenticate();
    } else {
      const password = prompt("Confirm it is you: enter your password.");
      if (password === null) throw error;
      await client.reauthenticate({ password });
    }
    return action();
  }
}

async function run(action) {
  try {
    await confirmingIdentity(action);
  } catch (error) {
    announce(describe(error), true);
    if (error.problem && error.problem.code === "unauthenticated") showSignedOut();
  }
}

function onSubmit(id, handler) {
  document.getElementById(id).addEventListener("submit", (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(event.target).entries());
    run(() => handler(data));
  });
}

document.addEventListener("DOMContentLoaded", () => {
  if (!window.PublicKeyCredential) announce("This browser does not support passkeys; password sign-in still works.", true);

  onSubmit("passkey-sign-in-form", async () => {
    client.stopAutofill();
    await passkeySignIn();
  });
  onSubmit("passkey-account-form", (data) => createPasskeyAccount(data.email, data.displayName));
  onSubmit("password-sign-in-form", async (data) => {
    const session = await api("POST", "/v1/sessions/password", { email: data.email, password: data.password });
    await signInWithSession(session, `Signed in with a password as ${session.displayName}.`);
    await tryAutomaticUpgrade();
  });
  onSubmit("password-sign-up-form", async (data) => {
    await api("POST", "/v1/accounts/password", data);
    const session = await api("POST", "/v1/sessions/password", { email: data.email, password: data.password });
    await signInWithSession(session, `Account created. Signed in as ${session.displayName}.`);
  });
  onSubmit("display-name-form", (data) => renameAccount(data.displayName));
  onSubmit("password-form", async (data) => {
    const { replaced, sessionsRevoked } = await client.setPassword(data.password);
    document.getElementById("password-form").reset();
    await showAccount();
    announce(`${replaced ? "Password changed" : "Password set"}; ${sessionsRevoked} other session(s) signed out.`);
  });
  document.getElementById("add-passkey").addEventListener("click", () => run(async () => {
    await client.addPasskey({ mode: "modal" });
    await showAccount();
    announce("Passkey added.");
  }));
  document.getElementById("remove-password").addEventListener("click", () => run(async () => {
    if (!confirm("Remove your password? You will sign in with your passkeys only.")) return;
    await api("DELETE", "/v1/account/password");
    await showAccount();
    announce("Password removed: you sign in with passkeys only.");
  }));

  document.getElementById("sign-out").addEventListener("click", () => run(async () => {
    await client.signOut();
    showSignedOut();
    announce("Signed out.");
  }));

  explainAddress();
  if (localStorage.getItem(cookieModeKey)) {
    // Cookie mode: the HttpOnly cookie may still hold a refresh token, which gets this visit its access token.
    run(async () => {
      if (!(await client.resume())) {
        showSignedOut();
        openSection();
        return;
      }
      await showAccount();
      openSection();
    });
  } else {
    showSignedOut();
    openSection();
  }
});

// The helpers recovery.js shares.
export { announce, api, client, onSubmit, run, showAccount, signInWithSession };

// What the browser tests reach into: the client's in-memory tokens and the signed-in view's loader.
window.passkeyDemo = { client, tokens: client.tokens, showAccount };

// Account recovery on the demo page: "lost your passkey?" (an emailed code or a recovery code gives a recovery
// session, which can only create a new passkey), and, signed in, verifying the email and making recovery codes.
import { PasskeyProblem, creationOptions, credentialJSON } from "/passkey/v1/passkey.js";
import { announce, api, client, onSubmit, run, showAccount, signInWithSession } from "/app.js";

// The recovery session's token is kept apart from the normal one (no other call may carry it), and like it in
// memory only: a reload starts the recovery again.
let recoveryToken = null;

async function recoveryCall(method, path, body) {
  const headers = { Authorization: `Bearer ${recoveryToken}`, "Content-Type": "application/json" };
  const response = await fetch(path, { method, headers, body: JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    if (response.status === 401) recoveryToken = null;
    throw new PasskeyProblem({ status: response.status, ...data });
  }
  return data;
}

function showRecoveryStep(step) {
  for (const id of ["recovery-start-form", "recovery-finish-form", "recovery-passkey"]) {
    document.getElementById(id).hidden = id !== step;
  }
}

// With a recovery session: create the new passkey. Its finish ends the recovery session and signs in.
async function createRecoveryPasskey() {
  const start = await recoveryCall("POST", "/v1/passkeys/registrations", { mode: "modal" });
  client.stopAutofill();
  const credential = await navigator.credentials.create({ publicKey: creationOptions(start.publicKey) });
  const session = await recoveryCall("POST", "/v1/recovery/passkeys/finish", {
    challengeID: start.challengeID,
    credential: credentialJSON(credential),
  });
  recoveryToken = null;
  showRecoveryStep("recovery-start-form");
  await signInWithSession(session, `Your new passkey is saved. Signed in as ${session.displayName}.`);
}

// Signed in: whether the email is verified, and the recovery codes left. Called by app.js's showAccount.
export function showRecoveryCard(account) {
  document.getElementById("email-status").textContent = account.emailVerified
    ? "Your email is verified: it can be used to recover this account."
    : "Your email is not verified yet: enter the code we sent, or send a new one.";
  document.getElementById("email-verify-form").hidden = account.emailVerified;
  document.getElementById("resend-verification").hidden = account.emailVerified;
  document.getElementById("recovery-codes-status").textContent =
    `${account.recoveryCodesRemaining} unused recovery code${account.recoveryCodesRemaining === 1 ? "" : "s"}.`;
}

document.addEventListener("DOMContentLoaded", () => {
  let email = "";
  onSubmit("recovery-start-form", async (data) => {
    email = data.email.trim();
    await api("POST", "/v1/recovery", { email });
    showRecoveryStep("recovery-finish-form");
    announce("If that address is a verified account email, a code is on its way. It works for 10 minutes.");
    document.getElementById("recovery-code").focus();
  });
  onSubmit("recovery-finish-form", async (data) => {
    const code = data.code.replace(/\s+/g, "");
    const body = /^[0-9]{8}$/.test(code) ? { email, code } : { email, recoveryCode: data.code };
    const recovery = await api("POST", "/v1/recovery/finish", body);
    recoveryToken = recovery.accessToken;
    showRecoveryStep("recovery-passkey");
    announce(`Code accepted. Create a new passkey for ${recovery.displayName} to finish.`);
  });
  document.getElementById("recovery-use-code").addEventListener("click", () => {
    email = document.getElementById("recovery-email").value.trim();
    if (!email) return announce("Enter your email first.", true);
    showRecoveryStep("recovery-finish-form");
    document.getElementById("recovery-code").focus();
  });
  document.getElementById("recovery-create-passkey").addEventListener("click", () => run(createRecoveryPasskey));
  // Or end the recovery with a new password: the recovery session ends and a password session is issued.
  onSubmit("recovery-password-form", async (data) => {
    const session = await recoveryCall("POST", "/v1/recovery/password/finish", { password: data.password });
    recoveryToken = null;
    document.getElementById("recovery-password-form").reset();
    showRecoveryStep("recovery-start-form");
    await signInWithSession(session, `Your new password is set. Signed in as ${session.displayName}.`);
  });

  onSubmit("email-verify-form", async (data) => {
    await api("POST", "/v1/account/email/verify", { code: data.code.trim() });
    await showAccount();
    announce("Your email is verified.");
  });
  document.getElementById("resend-verification").addEventListener("click", () => run(async () => {
    await api("POST", "/v1/account/email/verification", {});
    announce("A new verification code is on its way.");
  }));
  document.getElementById("generate-recovery-codes").addEventListener("click", () => run(async () => {
    if (!confirm("New recovery codes replace any you made before. Continue?")) return;
    const { codes } = await api("POST", "/v1/account/recovery-codes", {});
    const list = document.getElementById("recovery-codes");
    list.replaceChildren(...codes.map((code) => Object.assign(document.createElement("li"), { textContent: code })));
    list.hidden = false;
    await showAccount();
    announce("Write these codes down now: they are shown only once, and each works once.");
  }));

  showRecoveryStep("recovery-start-form");
});

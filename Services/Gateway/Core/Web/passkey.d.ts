// Types of passkey.js, version 1 (served beside it at /passkey/v1/passkey.d.ts).

/** The module's version: the `v1` of its path. */
export declare const version: "1";

/** A problem document of the API (`application/problem+json`), with its HTTP status. */
export interface Problem {
  status: number;
  code?: string;
  reason?: string;
  title?: string;
  detail?: string;
  [member: string]: unknown;
}

/** A refusal by the server. */
export declare class PasskeyProblem extends Error {
  constructor(problem: Problem);
  readonly status: number;
  readonly code?: string;
  readonly reason?: string;
  readonly problem: Problem;
}

/** A session as sign-in, sign-up and refresh answer it. */
export interface Session {
  accessToken: string;
  refreshToken?: string;
  expiresIn?: number;
  refreshTokenExpiresAt?: string;
  accountID: string;
  displayName: string;
  [member: string]: unknown;
}

/** One passkey of `GET /v1/passkeys`. */
export interface Passkey {
  credentialID: string;
  name: string;
  aaguid: string;
  createdAt: string;
  lastUsedAt: string | null;
  backupEligible: boolean;
  backedUp: boolean;
  transports: string[];
  cloneWarning: boolean;
  providerName?: string;
  providerIconLight?: string;
  providerIconDark?: string;
}

/** `GET /v1/passkeys`. */
export interface PasskeyList {
  rpID: string;
  userHandle: string;
  passkeys: Passkey[];
}

/** `GET /v1/account` and `PATCH /v1/account`, the members the module reads. */
export interface Account {
  userHandle: string;
  userName: string;
  displayName: string;
  [member: string]: unknown;
}

/** The tokens a client holds; `expiresAt` and `lifetime` in milliseconds on this browser's clock. */
export interface Tokens {
  access: string | null;
  refresh: string | null;
  cookie: boolean;
  expiresAt: number;
  lifetime: number;
}

export interface PasskeyClientOptions {
  /** The gateway's origin; default: this page's. */
  baseURL?: string;
  /** Told of every new, refreshed (the session) or ended (null) session. */
  onSessionChange?: (session: Session | null) => void;
  fetch?: typeof fetch;
}

export declare class PasskeyClient {
  constructor(options?: PasskeyClientOptions);
  readonly baseURL: string;
  readonly tokens: Tokens;
  readonly signedIn: boolean;
  readonly canRefresh: boolean;
  readonly refreshDue: boolean;
  keepSession(session: Session): void;
  forgetSession(): void;
  refresh(): Promise<Session>;
  resume(): Promise<Session | null>;
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  signIn(options?: { mediation?: CredentialMediationRequirement; signal?: AbortSignal }): Promise<Session>;
  startAutofill(onSession: (session: Session) => void, onError?: (error: unknown) => void): Promise<boolean>;
  stopAutofill(): void;
  signUp(details: { email: string; displayName: string }): Promise<Session>;
  addPasskey(options?: { mode?: "modal" | "conditional" }): Promise<void>;
  upgrade(): Promise<boolean>;
  /** A fresh sign-in bound to the session (after 403 `reauthentication_required`): a passkey, or the password. */
  reauthenticate(options?: { password?: string }): Promise<void>;
  /** Sets or changes the account's password; the other sessions end. */
  setPassword(password: string): Promise<{ replaced: boolean; sessionsRevoked: number }>;
  passkeys(): Promise<PasskeyList>;
  removePasskey(credentialID: string): Promise<PasskeyList>;
  renamePasskey(credentialID: string, name: string): Promise<Passkey>;
  renameAccount(displayName: string): Promise<Account>;
  signOut(): Promise<void>;
}

export declare function toBase64URL(buffer: ArrayBuffer | ArrayBufferView): string;
export declare function fromBase64URL(text: string): ArrayBuffer;
export declare function creationOptions(json: PublicKeyCredentialCreationOptionsJSON): PublicKeyCredentialCreationOptions;
export declare function requestOptions(json: PublicKeyCredentialRequestOptionsJSON): PublicKeyCredentialRequestOptions;
export declare function credentialJSON(credential: PublicKeyCredential): PublicKeyCredentialJSON;
export declare function capabilities(): Promise<Record<string, boolean>>;
export declare function signal(name: string, options: object): boolean;
export declare function isUnknownCredential(error: unknown): boolean;
export declare function signalAcceptedCredentials(list: PasskeyList): boolean;
export declare function signalUserDetails(account: Account, rpID: string): boolean;

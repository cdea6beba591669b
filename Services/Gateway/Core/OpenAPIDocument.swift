/// The OpenAPI 3.1 description of the gateway's API, served at `/openapi.json`. Kept beside the routes so both
/// change together; the tests check that every route is described.
public enum OpenAPIDocument {
    /// The document's bytes.
    public static let bytes: [UInt8] = Array(text.utf8)

    static let text = ##"""
{
 "openapi": "3.1.0",
 "info": {
  "title": "Passkey sign-in gateway",
  "version": "1.0.0",
  "description": "The JSON API apps call. Errors are application/problem+json with a stable code; binary values are base64url without padding; times are RFC 3339 UTC."
 },
 "paths": {
  "/v1/accounts/password": {
   "post": {
    "operationId": "createPasswordAccount",
    "summary": "Create an account with email and password.",
    "responses": {
     "201": {
      "description": "Created",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/AccountCreated"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "409": {
      "$ref": "#/components/responses/409"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/PasswordAccountRequest"
       }
      }
     }
    },
    "security": []
   }
  },
  "/v1/sessions/password": {
   "post": {
    "operationId": "signInWithPassword",
    "summary": "Sign in with email and password.",
    "responses": {
     "200": {
      "description": "Signed in",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Session"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "429": {
      "$ref": "#/components/responses/429"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/PasswordSignInRequest"
       }
      }
     }
    },
    "security": []
   }
  },
  "/v1/passkeys/registrations": {
   "post": {
    "operationId": "beginRegistration",
    "summary": "Start adding a passkey to the signed-in account (modal or conditional).",
    "responses": {
     "200": {
      "description": "Creation options",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/RegistrationStart"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "403": {
      "$ref": "#/components/responses/403"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": false,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/RegistrationStartRequest"
       }
      }
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   }
  },
  "/v1/passkeys/registrations/finish": {
   "post": {
    "operationId": "finishRegistration",
    "summary": "Finish adding a passkey.",
    "responses": {
     "204": {
      "description": "Registered"
     },
     "400": {
      "$ref": "#/components/responses/400VerificationFailed"
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "409": {
      "$ref": "#/components/responses/409"
     },
     "410": {
      "$ref": "#/components/responses/410"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "429": {
      "$ref": "#/components/responses/429"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/RegistrationFinishRequest"
       }
      }
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   }
  },
  "/v1/passkeys/account-registrations": {
   "post": {
    "operationId": "beginAccountRegistration",
    "summary": "Start creating an account with a passkey.",
    "responses": {
     "200": {
      "description": "Creation options",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/AccountRegistrationStart"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": false,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/AccountRegistrationStartRequest"
       }
      }
     }
    },
    "security": []
   }
  },
  "/v1/passkeys/account-registrations/finish": {
   "post": {
    "operationId": "finishAccountRegistration",
    "summary": "Finish creating an account with a passkey.",
    "responses": {
     "201": {
      "description": "Created",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/AccountCreated"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400VerificationFailed"
     },
     "409": {
      "$ref": "#/components/responses/409"
     },
     "410": {
      "$ref": "#/components/responses/410"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "429": {
      "$ref": "#/components/responses/429"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/AccountRegistrationFinishRequest"
       }
      }
     }
    },
    "security": []
   }
  },
  "/v1/passkeys/authentications": {
   "post": {
    "operationId": "beginAuthentication",
    "summary": "Start a discoverable passkey sign-in.",
    "responses": {
     "200": {
      "description": "Request options",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/AuthenticationStart"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": false,
     "content": {
      "application/json": {
       "schema": {
        "type": "object"
       }
      }
     }
    },
    "security": []
   }
  },
  "/v1/passkeys/authentications/finish": {
   "post": {
    "operationId": "finishAuthentication",
    "summary": "Finish a passkey sign-in.",
    "responses": {
     "200": {
      "description": "Signed in",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Session"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "401": {
      "$ref": "#/components/responses/401InvalidCredentials"
     },
     "410": {
      "$ref": "#/components/responses/410"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "429": {
      "$ref": "#/components/responses/429"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/AuthenticationFinishRequest"
       }
      }
     }
    },
    "security": []
   }
  },
  "/v1/session": {
   "get": {
    "operationId": "currentSession",
    "summary": "The current session.",
    "responses": {
     "200": {
      "description": "The session",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/CurrentSession"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   },
   "delete": {
    "operationId": "signOut",
    "summary": "Revoke the current session.",
    "responses": {
     "204": {
      "description": "Revoked"
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   }
  },
  "/v1/sessions": {
   "get": {
    "operationId": "listSessions",
    "summary": "The account's live sessions.",
    "responses": {
     "200": {
      "description": "Sessions",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/SessionList"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   }
  },
  "/v1/sessions/{sessionID}": {
   "delete": {
    "operationId": "revokeSession",
    "summary": "Revoke one of the account's sessions.",
    "responses": {
     "204": {
      "description": "Revoked"
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "404": {
      "$ref": "#/components/responses/404"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   },
   "parameters": [
    {
     "name": "sessionID",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string"
     }
    }
   ]
  },
  "/v1/account": {
   "get": {
    "operationId": "account",
    "summary": "The signed-in account.",
    "responses": {
     "200": {
      "description": "The account",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Account"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   }
  },
  "/v1/passkeys": {
   "get": {
    "operationId": "listPasskeys",
    "summary": "The account's passkeys.",
    "responses": {
     "200": {
      "description": "Passkeys",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/PasskeyList"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   }
  },
  "/v1/passkeys/{credentialID}": {
   "patch": {
    "operationId": "renamePasskey",
    "summary": "Rename a passkey.",
    "responses": {
     "200": {
      "description": "The passkey",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Passkey"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "404": {
      "$ref": "#/components/responses/404"
     },
     "413": {
      "$ref": "#/components/responses/413"
     },
     "415": {
      "$ref": "#/components/responses/415"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/RenamePasskeyRequest"
       }
      }
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   },
   "delete": {
    "operationId": "removePasskey",
    "summary": "Remove a passkey (never the last way to sign in).",
    "responses": {
     "204": {
      "description": "Removed"
     },
     "400": {
      "$ref": "#/components/responses/400"
     },
     "401": {
      "$ref": "#/components/responses/401"
     },
     "404": {
      "$ref": "#/components/responses/404"
     },
     "409": {
      "$ref": "#/components/responses/409"
     },
     "503": {
      "$ref": "#/components/responses/503"
     }
    },
    "security": [
     {
      "bearer": []
     }
    ]
   },
   "parameters": [
    {
     "name": "credentialID",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     }
    }
   ]
  },
  "/.well-known/apple-app-site-association": {
   "get": {
    "operationId": "appleAppSiteAssociation",
    "summary": "webcredentials apps for iOS.",
    "security": [],
    "responses": {
     "200": {
      "description": "AASA",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "required": [
          "webcredentials"
         ],
         "properties": {
          "webcredentials": {
           "type": "object",
           "properties": {
            "apps": {
             "type": "array",
             "items": {
              "type": "string"
             }
            }
           }
          }
         }
        }
       }
      }
     }
    }
   }
  },
  "/.well-known/assetlinks.json": {
   "get": {
    "operationId": "assetLinks",
    "summary": "Digital Asset Links statements for Android.",
    "security": [],
    "responses": {
     "200": {
      "description": "Statements",
      "content": {
       "application/json": {
        "schema": {
         "type": "array",
         "items": {
          "type": "object",
          "properties": {
           "relation": {
            "type": "array",
            "items": {
             "const": "delegate_permission/common.get_login_creds"
            }
           },
           "target": {
            "type": "object",
            "properties": {
             "namespace": {
              "const": "android_app"
             },
             "package_name": {
              "type": "string"
             },
             "sha256_cert_fingerprints": {
              "type": "array",
              "items": {
               "type": "string"
              }
             }
            }
           }
          }
         }
        }
       }
      }
     }
    }
   }
  },
  "/.well-known/webauthn": {
   "get": {
    "operationId": "relatedOrigins",
    "summary": "Related origins.",
    "security": [],
    "responses": {
     "200": {
      "description": "Origins",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "properties": {
          "origins": {
           "type": "array",
           "items": {
            "type": "string"
           }
          }
         }
        }
       }
      }
     }
    }
   }
  },
  "/.well-known/passkey-endpoints": {
   "get": {
    "operationId": "passkeyEndpoints",
    "summary": "Passkey enrollment and management pages.",
    "security": [],
    "responses": {
     "200": {
      "description": "Endpoints",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "properties": {
          "enroll": {
           "type": "string",
           "format": "uri"
          },
          "manage": {
           "type": "string",
           "format": "uri"
          }
         }
        }
       }
      }
     },
     "404": {
      "description": "not_found: no web origin is configured",
      "content": {
       "application/problem+json": {
        "schema": {
         "$ref": "#/components/schemas/Problem"
        }
       }
      }
     }
    }
   }
  },
  "/healthz": {
   "get": {
    "operationId": "health",
    "summary": "The process is alive.",
    "security": [],
    "responses": {
     "200": {
      "description": "Alive",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "properties": {
          "status": {
           "const": "ok"
          }
         }
        }
       }
      }
     }
    }
   }
  },
  "/readyz": {
   "get": {
    "operationId": "readiness",
    "summary": "Every backend service answers its health check with SERVING.",
    "security": [],
    "responses": {
     "200": {
      "description": "Ready",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Readiness"
        }
       }
      }
     },
     "503": {
      "description": "Not ready",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Readiness"
        }
       }
      }
     }
    }
   }
  },
  "/metrics": {
   "get": {
    "operationId": "metrics",
    "summary": "Prometheus metrics.",
    "security": [],
    "responses": {
     "200": {
      "description": "Prometheus text format 0.0.4",
      "content": {
       "text/plain": {
        "schema": {
         "type": "string"
        }
       }
      }
     }
    }
   }
  },
  "/openapi.json": {
   "get": {
    "operationId": "openAPI",
    "summary": "This document.",
    "security": [],
    "responses": {
     "200": {
      "description": "OpenAPI 3.1",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     }
    }
   }
  }
 },
 "components": {
  "securitySchemes": {
   "bearer": {
    "type": "http",
    "scheme": "bearer"
   }
  },
  "schemas": {
   "Problem": {
    "type": "object",
    "required": [
     "type",
     "title",
     "status",
     "code"
    ],
    "properties": {
     "type": {
      "type": "string",
      "format": "uri"
     },
     "title": {
      "type": "string"
     },
     "status": {
      "type": "integer"
     },
     "code": {
      "type": "string",
      "enum": [
       "invalid_request",
       "verification_failed",
       "unauthenticated",
       "invalid_credentials",
       "forbidden",
       "not_found",
       "email_taken",
       "credential_already_registered",
       "last_sign_in_method",
       "challenge_unavailable",
       "payload_too_large",
       "unsupported_media_type",
       "rate_limited",
       "unavailable",
       "method_not_allowed",
       "header_fields_too_large",
       "request_timeout",
       "not_implemented",
       "internal_error"
      ]
     },
     "reason": {
      "type": "string",
      "description": "The WebAuthn check that failed.",
      "enum": [
       "type_mismatch",
       "challenge_mismatch",
       "origin_mismatch",
       "cross_origin_not_allowed",
       "rp_id_hash_mismatch",
       "user_present_flag_not_set",
       "user_verification_required",
       "backup_state_invalid",
       "unsupported_algorithm",
       "algorithm_not_allowed",
       "credential_id_too_long",
       "attestation_invalid",
       "attestation_untrusted",
       "signature_invalid",
       "sign_count_regressed",
       "user_handle_mismatch",
       "malformed_cbor",
       "malformed_client_data",
       "malformed_authenticator_data",
       "challenge_spent"
      ]
     },
     "detail": {
      "type": "string"
     }
    }
   },
   "Session": {
    "type": "object",
    "required": [
     "accessToken",
     "tokenType",
     "expiresAt",
     "accountID",
     "displayName"
    ],
    "properties": {
     "accessToken": {
      "type": "string"
     },
     "tokenType": {
      "const": "Bearer"
     },
     "expiresAt": {
      "type": "string",
      "format": "date-time",
      "description": "RFC 3339, UTC"
     },
     "accountID": {
      "type": "string"
     },
     "displayName": {
      "type": "string"
     }
    }
   },
   "AccountCreated": {
    "type": "object",
    "required": [
     "accountID"
    ],
    "properties": {
     "accountID": {
      "type": "string"
     }
    }
   },
   "PasswordAccountRequest": {
    "type": "object",
    "required": [
     "email",
     "password",
     "displayName"
    ],
    "properties": {
     "email": {
      "type": "string"
     },
     "password": {
      "type": "string"
     },
     "displayName": {
      "type": "string"
     }
    }
   },
   "PasswordSignInRequest": {
    "type": "object",
    "required": [
     "email",
     "password"
    ],
    "properties": {
     "email": {
      "type": "string"
     },
     "password": {
      "type": "string"
     }
    }
   },
   "CredentialDescriptor": {
    "type": "object",
    "required": [
     "type",
     "id"
    ],
    "properties": {
     "type": {
      "const": "public-key"
     },
     "id": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "transports": {
      "type": "array",
      "items": {
       "type": "string"
      }
     }
    }
   },
   "PublicKeyCredentialCreationOptionsJSON": {
    "type": "object",
    "required": [
     "rp",
     "user",
     "challenge",
     "pubKeyCredParams",
     "timeout",
     "excludeCredentials",
     "authenticatorSelection",
     "attestation"
    ],
    "properties": {
     "rp": {
      "type": "object",
      "required": [
       "id",
       "name"
      ],
      "properties": {
       "id": {
        "type": "string"
       },
       "name": {
        "type": "string"
       }
      }
     },
     "user": {
      "type": "object",
      "required": [
       "id",
       "name",
       "displayName"
      ],
      "properties": {
       "id": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "name": {
        "type": "string"
       },
       "displayName": {
        "type": "string"
       }
      }
     },
     "challenge": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "pubKeyCredParams": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "type",
        "alg"
       ],
       "properties": {
        "type": {
         "const": "public-key"
        },
        "alg": {
         "type": "integer",
         "enum": [
          -7,
          -8,
          -257
         ]
        }
       }
      }
     },
     "timeout": {
      "type": "integer"
     },
     "excludeCredentials": {
      "type": "array",
      "items": {
       "$ref": "#/components/schemas/CredentialDescriptor"
      }
     },
     "authenticatorSelection": {
      "type": "object",
      "properties": {
       "residentKey": {
        "const": "required"
       },
       "requireResidentKey": {
        "const": true
       },
       "userVerification": {
        "const": "preferred"
       }
      }
     },
     "attestation": {
      "const": "none"
     },
     "extensions": {
      "type": "object",
      "properties": {
       "credProps": {
        "type": "boolean"
       }
      }
     }
    }
   },
   "PublicKeyCredentialRequestOptionsJSON": {
    "type": "object",
    "required": [
     "rpId",
     "challenge",
     "timeout",
     "allowCredentials",
     "userVerification"
    ],
    "properties": {
     "rpId": {
      "type": "string"
     },
     "challenge": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "timeout": {
      "type": "integer"
     },
     "allowCredentials": {
      "type": "array",
      "maxItems": 0,
      "items": {
       "$ref": "#/components/schemas/CredentialDescriptor"
      }
     },
     "userVerification": {
      "const": "preferred"
     }
    }
   },
   "RegistrationStartRequest": {
    "type": "object",
    "properties": {
     "mode": {
      "type": "string",
      "enum": [
       "modal",
       "conditional"
      ],
      "default": "modal"
     }
    }
   },
   "RegistrationStart": {
    "type": "object",
    "required": [
     "challengeID",
     "relyingPartyID",
     "userID",
     "userName",
     "displayName",
     "challenge",
     "expiresAt",
     "publicKey"
    ],
    "properties": {
     "challengeID": {
      "type": "string"
     },
     "relyingPartyID": {
      "type": "string"
     },
     "userID": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "userName": {
      "type": "string"
     },
     "displayName": {
      "type": "string"
     },
     "challenge": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "expiresAt": {
      "type": "string",
      "format": "date-time",
      "description": "RFC 3339, UTC"
     },
     "mode": {
      "type": "string",
      "enum": [
       "modal",
       "conditional"
      ]
     },
     "publicKey": {
      "$ref": "#/components/schemas/PublicKeyCredentialCreationOptionsJSON"
     },
     "mediation": {
      "const": "conditional",
      "description": "Present in conditional mode only."
     }
    }
   },
   "RegistrationResponseJSON": {
    "type": "object",
    "required": [
     "response"
    ],
    "description": "PublicKeyCredential.toJSON() of a registration; rawId or id is required.",
    "properties": {
     "id": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "rawId": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "type": {
      "const": "public-key"
     },
     "authenticatorAttachment": {
      "type": [
       "string",
       "null"
      ]
     },
     "response": {
      "type": "object",
      "required": [
       "clientDataJSON",
       "attestationObject"
      ],
      "properties": {
       "clientDataJSON": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "attestationObject": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "transports": {
        "type": "array",
        "items": {
         "type": "string"
        }
       }
      }
     },
     "clientExtensionResults": {
      "type": "object",
      "properties": {
       "credProps": {
        "type": "object",
        "properties": {
         "rk": {
          "type": "boolean"
         }
        }
       }
      }
     }
    }
   },
   "AuthenticationResponseJSON": {
    "type": "object",
    "required": [
     "response"
    ],
    "description": "PublicKeyCredential.toJSON() of an assertion; rawId or id is required.",
    "properties": {
     "id": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "rawId": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "type": {
      "const": "public-key"
     },
     "authenticatorAttachment": {
      "type": [
       "string",
       "null"
      ]
     },
     "response": {
      "type": "object",
      "required": [
       "clientDataJSON",
       "authenticatorData",
       "signature",
       "userHandle"
      ],
      "properties": {
       "clientDataJSON": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "authenticatorData": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "signature": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "userHandle": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       }
      }
     },
     "clientExtensionResults": {
      "type": "object"
     }
    }
   },
   "RegistrationFinishRequest": {
    "oneOf": [
     {
      "type": "object",
      "required": [
       "challengeID",
       "credentialID",
       "clientDataJSON",
       "attestationObject"
      ],
      "properties": {
       "challengeID": {
        "type": "string"
       },
       "credentialID": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "clientDataJSON": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "attestationObject": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "transports": {
        "type": "array",
        "items": {
         "type": "string"
        }
       }
      }
     },
     {
      "type": "object",
      "required": [
       "challengeID",
       "credential"
      ],
      "properties": {
       "challengeID": {
        "type": "string"
       },
       "credential": {
        "$ref": "#/components/schemas/RegistrationResponseJSON"
       }
      }
     }
    ]
   },
   "AccountRegistrationStartRequest": {
    "type": "object",
    "properties": {
     "email": {
      "type": "string"
     },
     "displayName": {
      "type": "string"
     }
    }
   },
   "AccountRegistrationStart": {
    "type": "object",
    "required": [
     "registrationID",
     "relyingPartyID",
     "userID",
     "challenge",
     "expiresAt",
     "publicKey"
    ],
    "properties": {
     "registrationID": {
      "type": "string"
     },
     "relyingPartyID": {
      "type": "string"
     },
     "userID": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "userName": {
      "type": "string"
     },
     "displayName": {
      "type": "string"
     },
     "challenge": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "expiresAt": {
      "type": "string",
      "format": "date-time",
      "description": "RFC 3339, UTC"
     },
     "publicKey": {
      "$ref": "#/components/schemas/PublicKeyCredentialCreationOptionsJSON"
     }
    }
   },
   "AccountRegistrationFinishRequest": {
    "oneOf": [
     {
      "type": "object",
      "required": [
       "registrationID",
       "credentialID",
       "clientDataJSON",
       "attestationObject"
      ],
      "properties": {
       "registrationID": {
        "type": "string"
       },
       "email": {
        "type": "string"
       },
       "displayName": {
        "type": "string"
       },
       "credentialID": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "clientDataJSON": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "attestationObject": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "transports": {
        "type": "array",
        "items": {
         "type": "string"
        }
       }
      }
     },
     {
      "type": "object",
      "required": [
       "registrationID",
       "credential"
      ],
      "properties": {
       "registrationID": {
        "type": "string"
       },
       "email": {
        "type": "string"
       },
       "displayName": {
        "type": "string"
       },
       "credential": {
        "$ref": "#/components/schemas/RegistrationResponseJSON"
       }
      }
     }
    ]
   },
   "AuthenticationStart": {
    "type": "object",
    "required": [
     "challengeID",
     "relyingPartyID",
     "challenge",
     "expiresAt",
     "publicKey"
    ],
    "properties": {
     "challengeID": {
      "type": "string"
     },
     "relyingPartyID": {
      "type": "string"
     },
     "challenge": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "expiresAt": {
      "type": "string",
      "format": "date-time",
      "description": "RFC 3339, UTC"
     },
     "publicKey": {
      "$ref": "#/components/schemas/PublicKeyCredentialRequestOptionsJSON"
     }
    }
   },
   "AuthenticationFinishRequest": {
    "oneOf": [
     {
      "type": "object",
      "required": [
       "challengeID",
       "credentialID",
       "clientDataJSON",
       "authenticatorData",
       "signature",
       "userHandle"
      ],
      "properties": {
       "challengeID": {
        "type": "string"
       },
       "credentialID": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "clientDataJSON": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "authenticatorData": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "signature": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       },
       "userHandle": {
        "type": "string",
        "contentEncoding": "base64url",
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "base64url without padding"
       }
      }
     },
     {
      "type": "object",
      "required": [
       "challengeID",
       "credential"
      ],
      "properties": {
       "challengeID": {
        "type": "string"
       },
       "credential": {
        "$ref": "#/components/schemas/AuthenticationResponseJSON"
       }
      }
     }
    ]
   },
   "CurrentSession": {
    "type": "object",
    "required": [
     "sessionID",
     "accountID",
     "displayName",
     "authenticationMethod",
     "createdAt",
     "expiresAt"
    ],
    "properties": {
     "sessionID": {
      "type": "string"
     },
     "accountID": {
      "type": "string"
     },
     "displayName": {
      "type": "string"
     },
     "authenticationMethod": {
      "type": "string",
      "enum": [
       "password",
       "passkey"
      ]
     },
     "createdAt": {
      "type": "string",
      "format": "date-time",
      "description": "RFC 3339, UTC"
     },
     "expiresAt": {
      "type": "string",
      "format": "date-time",
      "description": "RFC 3339, UTC"
     }
    }
   },
   "SessionList": {
    "type": "object",
    "required": [
     "sessions"
    ],
    "properties": {
     "sessions": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "sessionID",
        "authenticationMethod",
        "createdAt",
        "expiresAt",
        "current"
       ],
       "properties": {
        "sessionID": {
         "type": "string"
        },
        "authenticationMethod": {
         "type": "string",
         "enum": [
          "password",
          "passkey"
         ]
        },
        "createdAt": {
         "type": "string",
         "format": "date-time",
         "description": "RFC 3339, UTC"
        },
        "expiresAt": {
         "type": "string",
         "format": "date-time",
         "description": "RFC 3339, UTC"
        },
        "current": {
         "type": "boolean"
        }
       }
      }
     }
    }
   },
   "Account": {
    "type": "object",
    "required": [
     "accountID",
     "displayName",
     "emails",
     "hasPassword",
     "passkeyCount"
    ],
    "properties": {
     "accountID": {
      "type": "string"
     },
     "displayName": {
      "type": "string"
     },
     "emails": {
      "type": "array",
      "items": {
       "type": "string"
      }
     },
     "hasPassword": {
      "type": "boolean"
     },
     "passkeyCount": {
      "type": "integer"
     }
    }
   },
   "Passkey": {
    "type": "object",
    "required": [
     "credentialID",
     "name",
     "aaguid",
     "createdAt",
     "lastUsedAt",
     "backupEligible",
     "backedUp",
     "transports"
    ],
    "properties": {
     "credentialID": {
      "type": "string",
      "contentEncoding": "base64url",
      "pattern": "^[A-Za-z0-9_-]*$",
      "description": "base64url without padding"
     },
     "name": {
      "type": "string"
     },
     "aaguid": {
      "type": "string"
     },
     "createdAt": {
      "type": "string",
      "format": "date-time",
      "description": "RFC 3339, UTC"
     },
     "lastUsedAt": {
      "type": [
       "string",
       "null"
      ],
      "format": "date-time"
     },
     "backupEligible": {
      "type": "boolean"
     },
     "backedUp": {
      "type": "boolean"
     },
     "transports": {
      "type": "array",
      "items": {
       "type": "string"
      }
     }
    }
   },
   "PasskeyList": {
    "type": "object",
    "required": [
     "passkeys"
    ],
    "properties": {
     "passkeys": {
      "type": "array",
      "items": {
       "$ref": "#/components/schemas/Passkey"
      }
     }
    }
   },
   "RenamePasskeyRequest": {
    "type": "object",
    "required": [
     "name"
    ],
    "properties": {
     "name": {
      "type": "string"
     }
    }
   },
   "Readiness": {
    "type": "object",
    "required": [
     "status",
     "services"
    ],
    "properties": {
     "status": {
      "type": "string",
      "enum": [
       "ready",
       "unavailable"
      ]
     },
     "services": {
      "type": "object",
      "additionalProperties": {
       "type": "string",
       "enum": [
        "serving",
        "unavailable"
       ]
      }
     }
    }
   }
  },
  "responses": {
   "400": {
    "description": "invalid_request: malformed JSON, missing or mistyped fields, bad base64url",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "401": {
    "description": "unauthenticated",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "403": {
    "description": "forbidden",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "404": {
    "description": "not_found",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "409": {
    "description": "conflict",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "410": {
    "description": "challenge_unavailable",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "413": {
    "description": "payload_too_large (over 64 KiB)",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "415": {
    "description": "unsupported_media_type",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "429": {
    "description": "rate_limited (Retry-After is set)",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    },
    "headers": {
     "Retry-After": {
      "schema": {
       "type": "integer"
      },
      "description": "Seconds to wait."
     }
    }
   },
   "503": {
    "description": "unavailable: a backend service cannot be reached",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "400VerificationFailed": {
    "description": "invalid_request, or verification_failed with reason when a WebAuthn check fails",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   },
   "401InvalidCredentials": {
    "description": "invalid_credentials (with reason when a WebAuthn check failed)",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   }
  }
 }
}
"""##
}

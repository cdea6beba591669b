#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

/* Function-like macros that Swift cannot import. */
static inline long copenssl_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long copenssl_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline int copenssl_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}
static inline int copenssl_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) {
    return sk_X509_push(stack, cert);
}
static inline STACK_OF(X509) *copenssl_sk_X509_new_null(void) {
    return sk_X509_new_null();
}
static inline void copenssl_sk_X509_free(STACK_OF(X509) *stack) {
    sk_X509_free(stack);
}
static inline void copenssl_sk_X509_pop_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}
static inline X509 *copenssl_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}
static inline long copenssl_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
static inline int copenssl_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
    return 0;
}

/* Key selections, signature padding constants and extension flags (composite macros). */
static inline int copenssl_EVP_PKEY_PUBLIC_KEY(void) {
    return EVP_PKEY_PUBLIC_KEY;
}
static inline int copenssl_RSA_PSS_SALTLEN_DIGEST(void) {
    return RSA_PSS_SALTLEN_DIGEST;
}
static inline int copenssl_RSA_PKCS1_PSS_PADDING(void) {
    return RSA_PKCS1_PSS_PADDING;
}
static inline int copenssl_X509_is_ca_by_basic_constraints(X509 *cert) {
    uint32_t flags = X509_get_extension_flags(cert);
    return (flags & EXFLAG_BCONS) != 0 && (flags & EXFLAG_CA) != 0;
}
static inline unsigned long copenssl_X509_V_FLAG_PARTIAL_CHAIN(void) {
    return X509_V_FLAG_PARTIAL_CHAIN;
}
static inline X509 *copenssl_d2i_X509(const unsigned char *bytes, long length) {
    const unsigned char *cursor = bytes;
    X509 *cert = d2i_X509(NULL, &cursor, length);
    /* A certificate followed by trailing bytes is rejected. */
    if (cert != NULL && cursor != bytes + length) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}
/* TLS: server name indication for a client connection. */
static inline long copenssl_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
/* TLS peers: the subject alternative names of a certificate. type is GEN_URI or GEN_DNS; *data is not NUL-terminated
   and lives as long as the names. */
static inline GENERAL_NAMES *copenssl_X509_subject_alt_names(X509 *cert) {
    return (GENERAL_NAMES *)X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
}
static inline int copenssl_general_names_count(const GENERAL_NAMES *names) {
    return sk_GENERAL_NAME_num(names);
}
static inline int copenssl_general_name_at(const GENERAL_NAMES *names, int index, const unsigned char **data, int *length) {
    const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, index);
    *data = NULL;
    *length = 0;
    if (name == NULL) return -1;
    if (name->type == GEN_URI || name->type == GEN_DNS) {
        *data = ASN1_STRING_get0_data(name->d.ia5);
        *length = ASN1_STRING_length(name->d.ia5);
    }
    return name->type;
}
static inline void copenssl_general_names_free(GENERAL_NAMES *names) {
    GENERAL_NAMES_free(names);
}
static inline int copenssl_GEN_URI(void) { return GEN_URI; }
static inline int copenssl_GEN_DNS(void) { return GEN_DNS; }
/* A server's verify callback that lets the handshake finish whatever the chain's result: the result stays on the
   connection (SSL_get_verify_result), and the application refuses calls from an unverified peer with a status. */
static int copenssl_accept_and_record(int preverified, X509_STORE_CTX *context) {
    (void)preverified;
    (void)context;
    return 1;
}
static inline void copenssl_SSL_CTX_verify_peer_recording(SSL_CTX *ctx) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, copenssl_accept_and_record);
}
#endif

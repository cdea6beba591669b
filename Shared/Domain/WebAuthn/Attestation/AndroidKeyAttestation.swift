import Crypto

/// The `android-key` format (WebAuthn §8.4), including the key description extension checks.
enum AndroidKeyAttestation {
    private static let keyDescriptionOID = "1.3.6.1.4.1.11129.2.1.17"
    private static let purposeTag: UInt64 = 1
    private static let allApplicationsTag: UInt64 = 600
    private static let originTag: UInt64 = 702
    private static let purposeSign = 2
    private static let originGenerated = 0

    static func verify(_ input: AttestationInput) throws(WebAuthnError) -> AttestationEvidence {
        typealias Reader = AttestationStatementReader
        let statement = input.statement
        try Reader.requireKeys(statement, ["alg", "sig", "x5c"], .androidKey)
        let algorithm = try Reader.algorithm(statement, .androidKey)
        let signature = try Reader.signature(statement, .androidKey)
        guard algorithm != .rs1, let path = try Reader.certificates(statement, .androidKey), let leaf = path.first
        else {
            throw Reader.invalid(.androidKey, "attStmt needs x5c and a SHA-2 alg")
        }
        let key = try Reader.publicKey(leaf, .androidKey)
        try Reader.verify(key, algorithm, signature: signature, message: input.signedData, .androidKey)
        guard key.isSameKey(as: input.credentialKey.key) else {
            throw Reader.invalid(.androidKey, "certificate key differs from the credential public key")
        }
        guard let ext = leaf.extensionValue(oid: keyDescriptionOID) else {
            throw Reader.invalid(.androidKey, "certificate has no key description extension")
        }
        try checkKeyDescription(ext.value, input: input)
        return AttestationEvidence(type: .basic, path: path)
    }

    private static func checkKeyDescription(_ der: [UInt8], input: AttestationInput) throws(WebAuthnError) {
        typealias Reader = AttestationStatementReader
        var reader = DERReader(der)
        guard let description = reader.read(), description.isSequence, reader.isAtEnd,
            let fields = description.children(), fields.count >= 8, fields[4].isOctetString,
            fields[6].isSequence, fields[7].isSequence,
            let softwareEnforced = authorizations(fields[6]), let teeEnforced = authorizations(fields[7])
        else { throw Reader.invalid(.androidKey, "key description is malformed") }
        guard constantTimeEquals(fields[4].content, input.clientDataHash) else {
            throw Reader.invalid(.androidKey, "attestationChallenge is not the clientDataHash")
        }
        guard softwareEnforced[allApplicationsTag] == nil, teeEnforced[allApplicationsTag] == nil else {
            throw Reader.invalid(.androidKey, "key is bound to all applications")
        }
        // §8.4: origin must be KM_ORIGIN_GENERATED and purpose must include KM_PURPOSE_SIGN, in teeEnforced alone or
        // in either list. An attestation whose lists carry no origin or no purpose (as the spec's own §16 example,
        // whose lists are both empty) proves neither, and is refused: what real devices send has both.
        let lists = input.policy.androidKeyRequiresTrustedEnvironment ? [teeEnforced] : [teeEnforced, softwareEnforced]
        let origins = lists.compactMap { $0[originTag] }.map { singleInteger($0) }
        guard !origins.isEmpty else {
            throw Reader.invalid(.androidKey, "the authorization lists carry no key origin")
        }
        guard origins.contains(originGenerated) else {
            throw Reader.invalid(.androidKey, "key origin is not KM_ORIGIN_GENERATED")
        }
        let purposeLists = lists.compactMap { $0[purposeTag] }
        guard !purposeLists.isEmpty else {
            throw Reader.invalid(.androidKey, "the authorization lists carry no key purpose")
        }
        guard purposeLists.flatMap({ integerSet($0) }).contains(purposeSign) else {
            throw Reader.invalid(.androidKey, "key purpose does not include KM_PURPOSE_SIGN")
        }
    }

    /// An AuthorizationList: tag number to the explicitly tagged inner element.
    private static func authorizations(_ list: DERReader.Element) -> [UInt64: DERReader.Element]? {
        guard let items = list.children() else { return nil }
        var result: [UInt64: DERReader.Element] = [:]
        for item in items {
            guard item.tagClass == 0x80, item.constructed, let inner = item.children(), inner.count == 1 else {
                return nil
            }
            result[item.tagNumber] = inner[0]
        }
        return result
    }

    private static func singleInteger(_ element: DERReader.Element) -> Int? { element.smallInteger }

    private static func integerSet(_ element: DERReader.Element) -> [Int] {
        guard element.isSet, let items = element.children() else { return [] }
        return items.compactMap(\.smallInteger)
    }
}

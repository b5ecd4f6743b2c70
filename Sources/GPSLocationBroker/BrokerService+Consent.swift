import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

// Consent: a program's request for a decision, the agent that answers it for its user, and the
// prompt's expiry. Part of `BrokerService`, in a file of its own.
extension BrokerService {
    func request(_ message: BrokerMessage, _ client: BrokerClient, _ id: Int) {
        guard let app = client.app else { return }
        let key = Key(uid: client.identity.uid, app: app)
        let always = message.bool("always") ?? false
        enum Step {
            case decided(AuthorizationDecision)
            case ask(BrokerClient, Int)
            case nobody
        }
        let step = state.withLock { state -> Step in
            let current = decision(for: client, app: app, in: &state)
            // Apple's rule: a request after a decision changes nothing (except When In Use → Always).
            guard current.status == .notDetermined || (always && current.status == .authorizedWhenInUse) else {
                return .decided(current)
            }
            guard let agent = state.agents[key.uid] else { return .nobody }
            let promptID = state.nextPrompt
            state.nextPrompt += 1
            state.prompts[promptID] = PendingPrompt(
                requester: client, requestID: id, key: key, agent: agent,
                deadline: Date().addingTimeInterval(promptTimeout), answered: nil)
            return .ask(agent, promptID)
        }
        switch step {
        case .decided(let decision):
            reply(client, id, ok: true, message: "already decided", decision: decision)
        case .nobody:
            let flag = always || !client.inUse ? "--always" : "--when-in-use"
            reply(
                client, id, ok: false,
                message: "no one can be asked for location permission for \(app) (no agent is running for uid "
                    + "\(key.uid)): nothing is delivered until it is granted — run `gpsloc auth grant \(app) \(flag)`, "
                    + "or keep `gpsloc agent` running in your terminal to be asked; locations start at once")
        case .ask(let agent, let promptID):
            var line = BrokerLine("PROMPT")
            line.add("prompt", promptID)
            line.add("app", app)
            line.add("identity", client.identity.kind)
            line.add("pid", Int(client.identity.pid))
            line.add("always", always)
            line.add("usage", message.string("usage"))
            agent.send(line.line)
            DispatchQueue.global().asyncAfter(deadline: .now() + promptTimeout) { [weak self] in
                self?.expire(promptID)
            }
        }
    }

    func expire(_ promptID: Int) {
        guard let prompt = state.withLock({ $0.prompts.removeValue(forKey: promptID) }) else { return }
        resolve(
            prompt, nil, once: false,
            message: "the agent did not answer within \(Int(promptTimeout)) s — nothing is delivered; run "
                + "`gpsloc auth grant \(prompt.key.app)` to decide")
    }

    /// Tells a prompt's requester how it ended: a socket program by its REPLY, another face by
    /// its callback.
    func resolve(_ prompt: PendingPrompt, _ decision: AuthorizationDecision?, once: Bool, message: String) {
        if let answered = prompt.answered { return answered(decision, once, message) }
        guard let requester = prompt.requester else { return }
        reply(requester, prompt.requestID, ok: decision != nil, message: message, decision: decision)
    }

    /// Asks `key.uid`'s `gpsloc agent` for another face's program (a GeoClue client's Start);
    /// false when no agent runs for that uid. `answered` is called once: with the decision
    /// (kept as the app's unless `once`), or nil and why (refused to answer, timed out, the
    /// agent went away).
    func askAgent(
        _ key: Key, identity: PeerIdentity, always: Bool, usage: String?,
        answered: @escaping @Sendable (AuthorizationDecision?, _ once: Bool, _ why: String) -> Void
    ) -> Bool {
        let asked = state.withLock { state -> (BrokerClient, Int)? in
            guard let agent = state.agents[key.uid] else { return nil }
            let promptID = state.nextPrompt
            state.nextPrompt += 1
            state.prompts[promptID] = PendingPrompt(
                requester: nil, requestID: 0, key: key, agent: agent,
                deadline: Date().addingTimeInterval(promptTimeout), answered: answered)
            return (agent, promptID)
        }
        guard let (agent, promptID) = asked else { return false }
        var line = BrokerLine("PROMPT")
        line.add("prompt", promptID)
        line.add("app", key.app)
        line.add("identity", identity.kind)
        line.add("pid", Int(identity.pid))
        line.add("always", always)
        line.add("usage", usage)
        agent.send(line.line)
        DispatchQueue.global().asyncAfter(deadline: .now() + promptTimeout) { [weak self] in
            self?.expire(promptID)
        }
        return true
    }

    func becomeAgent(_ client: BrokerClient, _ id: Int) {
        guard client.identity.flatpak == nil else {
            return reply(client, id, ok: false, message: "a sandboxed app cannot be an agent")
        }
        let previous = state.withLock { state -> BrokerClient? in
            defer {
                state.agents[client.identity.uid] = client
                client.isAgent = true
            }
            return state.agents[client.identity.uid]
        }
        if let previous, previous !== client {
            previous.send(errorLine("another agent took over for uid \(client.identity.uid)"))
        }
        reply(client, id, ok: true, message: "prompts for uid \(client.identity.uid) come here")
    }

    func answer(_ message: BrokerMessage, _ client: BrokerClient) {
        guard let promptID = message.int("prompt"),
            let prompt = state.withLock({ state -> PendingPrompt? in
                guard state.prompts[promptID]?.agent === client else { return nil }
                return state.prompts.removeValue(forKey: promptID)
            })
        else { return client.send(errorLine("no such prompt")) }
        let status = message.string("status").flatMap(BrokerProtocol.status(named:)) ?? .denied
        let accuracy = message.string("accuracy").flatMap(BrokerProtocol.accuracy(named:)) ?? .fullAccuracy
        let decision = AuthorizationDecision(
            status: status == .notDetermined || status == .restricted ? .denied : status, accuracy: accuracy)
        if message.bool("once") ?? false {
            if let requester = prompt.requester { allowOnce(requester, prompt.key, decision) }
            return resolve(prompt, decision, once: true, message: "answered")
        }
        do {
            try decide(prompt.key, decision)
            resolve(prompt, decision, once: false, message: "answered")
        } catch {
            resolve(prompt, nil, once: false, message: error.description)
        }
    }
}

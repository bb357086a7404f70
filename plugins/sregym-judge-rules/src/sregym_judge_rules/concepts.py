"""Reading a mechanism by its meaning, not its exact words (issue #35, third round).

A plain-English diagnosis rarely repeats the fault's words: "the disk is physically damaged, a third of the
blocks unreadable, reads fail with I/O errors" states "bad blocks on the volume's disk: reads of them fail
with EIO" without the word "bad" or "EIO". The rules judge therefore also reads the truth's own mechanism
statement as *concepts*: each word reduced to its stem ("composing" and "compose", "matches" and "match",
"dropped" and "drops"), and stems of one family of ordinary SRE English read as one concept ("drop", "lose",
"throw away"; "expired", "no longer valid"; "junk", "garbage"). The families are general English, written
once for every fault, never per fault or per sentence; the fault's mechanism statement decides which concepts
a diagnosis must carry.

A diagnosis states the mechanism when its sentence carries most of the mechanism's concepts, weighted so that
words every fault shares ("pod", "node", "service", "container") count for less than the words that tell this
fault from its siblings (see :func:`coverage`).
"""

from __future__ import annotations

import functools
import re

# Families of words that say the same thing in an SRE's prose. Each line is one concept; the first word names
# it. Multi-word entries are read as one token after :func:`_join_phrases`.
_FAMILIES = (
    "drop lose losing loss lost discard throw_away thrown_away swallow blackhole",
    "expire expiry invalid outdated lapse not_valid no_longer_valid validity_end past_its_validity",
    "evict eviction push_out kick_out displace throw_out thrown_out",
    "junk garbage bogus useless dummy filler",
    "rogue stray unwanted",
    "large big huge oversized giant bulky",
    "flood stuff spam overwhelm",
    "bad damage corrupt corruption defective defect unreadable faulty buggy broken",
    "forward route point send direct redirect route_to send_to hand_to hands_to",
    "bind listen occupy grab",
    "same identical very",
    "strict restrict strictest harden",
    "taint mark",
    "change update modify edit alter tweak",
    "remove delete",
    "reject refuse deny forbid disallow turn_away turned_away",
    "tiny small little minuscule undersized",
    "slow delay latency lag sluggish held_back hold_back holds_back held_up hold_up holds_up slowed_down late",
    "replica copy instance",
    "node machine host worker_node vm",
    "sidecar helper companion extra_container",
    "certificate cert",
    "exceed beyond above surpass",
    "more more_than surplus extra",
    "limit cap ceiling maximum max",
    "query lookup fetch",
    "eio io_error input_output_error i_o_error disk_error read_error",
    "job task batch",
    "never_exit never_finish never_complete never_stop never_end run_forever hang_forever stay_active",
    "skip skipped miss",
    "connection conn socket",
    "missing absent gone nonexistent not_exist does_not_exist no_such",
    "wrong incorrect mistaken bad_value",
    "password passwd credential",
    "permission privilege grant right access",
    "revoke take_away withdraw strip",
    "full exhaust fill_up out_of_space no_space",
    "crash exit die restart_loop crashloop",
    "lock exclusive_lock access_exclusive",
    "shared_memory shm dev_shm",
    "packet traffic pkt",
    "cache memcached redis valkey",
    "given give gave provide supply hand_over told know",
    "shrink shrunk shrank narrow",
    "answer reply respond return",
    "database db postgres postgresql mysql mongo mongodb",
    "webhook admission_webhook",
    "policy rule",
    "schedule place",
    "require mandatory must demand insist_on",
    "tls ssl encrypt encryption",
    "flag toggle switch feature_flag feature_switch feature_toggle",
    "enable turn_on switch_on activate flip_on",
    "another other foreign unrelated different",
    "config configuration setting settings",
    "regular normal ordinary plain",
    "app application",
    # fourth round (issue #35): concepts that recur across fault families, each shared by every fault with it
    "clash conflict collide collision already_in_use already_used in_use taken",
    "ingress entry_rule front_door entrance public_entry entry_gateway",
    "internal internal_only back_office",
    "backend back_end",
    "descriptor fd fds file_handle",
    "open_file open_files nofile",
    "low insufficient too_few not_enough",
    "aggressive eager impatient",
    "retry retries retried repeated_tries tries_again",
    "timeout time_out give_up gives_up",
    "backoff back_off wait_between waiting_between",
    "amplify multiply magnify compound",
    "storm avalanche",
    "readiness ready_check readiness_check",
    "liveness liveness_check health_check",
    "misconfigure misconfig wrong_path wrong_port",
    "endpoint endpoints",
    "requirepass require_pass auth_password",
    "startup start boot launch",
    "argument args command_line cmdline",
    "network net",
    "select match apply_to applies_to target catch pick pick_up picks_up",
    "selector label_filter label_selector pod_filter label_query",
    "speak talk understand",
    "http web_protocol web browser",
    "class ingress_class ingressclass",
    "controller ingress_controller",
    "tag version release",
    "image container_image",
    "exist present existing",
    "secret secrets",
    "label labelled relabel",
    "drift skew offset behind ahead",
    "finalizer finalizers",
    "read_only readonly",
    "memory ram",
    "port port_number",
    "use dial connect_to talk_to",
)

# Plain-English ways of saying a concept in several words, or with other words between them (issue #35, fifth round):
# "the name does not exist" is NXDOMAIN, "no two copies may share a machine" is a required anti-affinity, "the
# address range" an IP pool, "the call that flushes data to disk" fsync. Each line names the concepts a wording
# carries and the wording (a regular expression over the flattened text); like the families above, a line is
# written once for every fault whose statement has those concepts, never for one fault, and only adds a reading.
_GLOSSES = (
    ("nxdomain", r"\bnames?\b(?:\s+\S+){0,4}?\s+(?:does|do|did)\s+not\s+exist"),
    ("nxdomain", r"\bno\s+(?:such\s+)?(?:\S+\s+){0,2}(?:names?|hosts?|domains?|records?)\s+(?:exists?|found)\b"),
    ("nxdomain", r"\bno\s+such\s+(?:host|name|domain)\b|\bunknown\s+host\b|\bnon\s?existent\s+(?:domain|name)\b"),
    ("nxdomain answer", r"\b(?:answer|repl(?:y|ie)|respond|return|claim|say|tell)\w*\s+(?:that\s+)?(?:\S+\s+){0,5}"
                        r"(?:does|do)\s+not\s+exist"),
    ("coredns", r"\b(?:cluster|kubernetes|k8s|internal|in\s+cluster)(?:'s|\s+s)?\s+(?:dns|name\s?servers?|resolver)\b"),
    ("coredns nameserver", r"\bname\s+servers?\b|\bdns\s+(?:server|resolver)s?\b"),
    ("template", r"\b(?:rule|stanza|override|snippet|catch\s?all)s?\b"),
    ("whole zone", r"\b(?:all|every|any)\s+(?:of\s+the\s+)?(?:\S+\s+){0,1}(?:service\s+)?names?\b|\bnames?\b(?:\s+\S+){0,4}"
                   r"\s+(?:exist|resolve)s?\s+at\s+all\b|\bevery\s+(?:service|lookup)\b"),
    ("fsync syscall", r"\b(?:flush|sync|write)\w*\s+(?:\S+\s+){0,3}(?:to|on)\s+(?:the\s+)?disk\b"),
    ("syscall", r"\bsystem\s+calls?\b|\b(?:kernel|os)\s+calls?\b|\bthe\s+calls?\s+(?:that|which|to)\b"),
    ("errno fail", r"\b(?:reports?|returns?|gets?|gives?|throws?)\s+(?:an?\s+|the\s+)?(?:\S+\s+){0,3}errors?\b"
                   r"|\berrors?\s+out\b|\berror\s+codes?\b"),
    ("anti affinity require", r"\bno\s+two\b(?:\s+\S+){0,5}?\s+(?:(?:may|can|must|are\s+allowed\s+to)\s+)?"
                              r"(?:share|sit|run|be|land)\w*\s+(?:\S+\s+){0,2}(?:same|together|a\s+(?:node|machine|host))"),
    ("anti affinity", r"\b(?:must|may|can|should)\s+not\s+(?:share|run\s+together|be\s+co\s?located|sit\s+together)\b"
                      r"|\bone\s+(?:\S+\s+)?per\s+(?:node|machine|host)\b|\b(?:keep|kept|spread|force)\w*\s+(?:\S+\s+){0,3}apart\b"),
    ("require", r"\b(?:must|must\s+not|may\s+not|has\s+to|have\s+to|is\s+told|are\s+told|hard\s+rule|insists?)\b"),
    ("drop", r"\b(?:does|do|did)\s+not\s+(?:deliver|arrive|get\s+through)\b|\bnever\s+(?:arrive|get\s+through|make\s+it)\b"
             r"|\bgo(?:es)?\s+missing\b|\bvanish\w*"),
    ("ippool", r"\b(?:ip\s+|pod\s+)?address(?:es)?\s+(?:range|pool|block|space)s?\b|\b(?:ip|pod)\s+(?:range|pool|block|cidr|"
               r"subnet)s?\b|\bpool\s+of\s+(?:ip\s+)?addresses\b|\bsubnet\b"),
    ("shrink", r"\bmade\s+(?:\S+\s+){0,2}(?:small|smaller|tiny|narrow\w*)\b|\bcut\s+down\b|\breduced\b"),
    ("hold entire", r"\b(?:use|uses|used|using|take|takes|took|occup(?:y|ies|ied)|hold|holds|consum\w*)\s+(?:up\s+)?"
                    r"(?:all|every|each)\b"),
    ("selector select require", r"\blook(?:s|ed|ing)?\s+for\s+(?:pods|a\s+label|labels?|pods\s+with)\b"
                                r"|\bpicks?\s+(?:its\s+)?pods\s+by\b"),
    ("carry", r"\b(?:none|no)\s+of\s+(?:the\s+)?(?:\S+\s+){0,3}(?:have|has|carry|carries|wear|wears|bear|bears)\b"
              r"|\b(?:have|has|carry|carries|wear|wears)\s+(?:that|this|the|such\s+a|a)\s+label\b"),
    ("requirepass enable", r"\b(?:demand|requir|ask|want|expect|insist)\w*\s+(?:for\s+|on\s+)?(?:a\s+|an\s+)?"
                           r"(?:password|auth\w*|credential)"
                           r"|\bpassword\s*protect\w*|\bput\s+(?:a\s+)?password\s+on\b"
                           # tenth round: "wants a login password", "locked with a password"
                           r"|\b(?:demand|requir|ask|want|expect|insist)\w*\s+(?:for\s+)?(?:a\s+|an\s+)?(?:login|access|new)\s+password"
                           r"|\block\w*\s+(?:\S+\s+)?with\s+(?:a\s+)?password"),
    ("client", r"\b(?:services?|apps?|pods?|callers?)\s+(?:that|which)\s+(?:read|write|use|call|talk|connect)\w*"),
    ("limit", r"\broom\s+for\b|\ballowed\s+(?:only|at\s+most)\b|\bat\s+most\b"),
    ("low", r"\b(?:only|just)\s+(?:a\s+)?(?:couple|handful|few|dozen)\b|\bcouple\s+(?:of\s+)?dozen\b"),
    ("descriptor", r"\bsockets?\b|\bfile\s+handles?\b"),
    ("low", r"\bnot\s+(?:\S+\s+){0,2}enough\b|\bfar\s+below\b|\btoo\s+(?:low|small|few)\b"),
    ("misconfigure", r"\b(?:path|port|endpoint|url)s?\b(?:\s+\S+){0,4}?\s+(?:does|do|did)\s+not\s+(?:serve|listen|answer|"
                     r"expose|exist)|\bwrong\s+(?:\S+\s+){0,2}(?:path|port|url|endpoint)s?\b"),
    ("ingress", r"\b(?:incoming|inbound)\b"),
    ("enable", r"\b(?:turn|switch|flip)\w*\s+(?:\S+\s+){0,4}?on\b|\bset\s+(?:\S+\s+){0,3}?to\s+(?:on|true)\b"),
    ("webhook admission", r"\b(?:check|hook|gate|guard|validator)s?\s+(?:that|which)\s+(?:kubernetes|the\s+api\s+server|"
                          r"the\s+cluster|k8s)\s+(?:must\s+|has\s+to\s+|have\s+to\s+)?(?:call|ask|consult|run)s?"),
    ("admission", r"\bbefore\s+(?:\S+\s+){0,2}(?:creat\w*|admit\w*|accept\w*|start\w*)\s+(?:any\s+|a\s+|new\s+)?pods?\b"),
    ("failure policy fail", r"\b(?:refuse|reject|deny|fail|block)\w*\s+(?:\S+\s+){0,2}(?:when|if)\s+(?:it\s+)?(?:cannot|can\s+not|"
                           r"is\s+not|isn't)\s+(?:be\s+)?(?:reached|reachable|available|answer\w*|up)"),
    ("class controller", r"\b(?:kind|type|class)\s+of\s+(?:\S+\s+){0,1}(?:gateway|controller|proxy|router)s?\b"),
    ("controller", r"\b(?:entry\s+|ingress\s+|edge\s+)(?:gateway|router)s?\b"),
    ("node", r"\b(?:run|runs|running|sit|sits|live|lives|scheduled)\s+on\b|\bwhere\s+(?:\S+\s+){0,2}runs?\b"),
    # eighth round (issue #35): a value the system "does not recognise" is invalid (the "expire" family holds invalid);
    # the cluster's "phone book" is its name server, as a manager's summary says it
    ("expire", r"\b(?:does|do|did|would|could|can)\s*(?:not|n't)\s+(?:recogni[sz]e|accept|understand|know)\b"
               r"|\bunrecogni[sz]ed\b|\bunsupported\s+value\b|\bnot\s+an?\s+(?:valid|allowed|supported)\b"),
    ("coredns nameserver", r"\b(?:phone|address|telephone)\s?books?\b"),
    ("enable", r"\b(?:put|puts|putting)\s+on\b|\bwas\s+put\s+on\b"),
    # sixth round (issue #35): what a concept *does*, said in several words, for every fault whose statement has it
    ("slow", r"\b(?:hold|holds|held|holding|keep|keeps|kept)\s+(?:\S+\s+){1,3}back\b|\barrive\w*\s+(?:\S+\s+){0,4}late\b"),
    ("clash", r"\balready\s+(?:uses?|used|using|holds?|held|takes?|took|has|had|bound|binds|listens?\s+on|occupie[sd])\b"
              r"|\b(?:same|that)\s+port\s+(?:is\s+)?(?:taken|busy|occupied)\b"),
    ("client", r"\b(?:callers?|everybody|everyone|consumers?|the\s+(?:apps?|services?)\s+(?:that|which)\s+(?:use|call))\b"),
    ("change", r"\binstead\s+of\b|\bfrom\s+\S+\s+to\s+\S+|\b(?:bumped|moved|switched|swapped|rolled)\b"),
    ("ingress", r"\b(?:open\w*|mak\w*|start\w*)\s+(?:\S+\s+)?connections?\s+to\b|\b(?:traffic|connections?|requests?)\s+"
                r"(?:in)?to\s+(?:the\s+)?(?:pods?|it|them)\b"),
    # ninth round (issue #35): how a newcomer says a change, for every fault whose statement has the concept. A thing
    # that "is gone" or "does not exist any more" was removed; rights "taken away" or "removed" were revoked; a
    # database login is its role; what a thing "needs" it requires; "asks for 0 copies" is scaled to zero; the files
    # a process "may have open" are its open files; a setting "defined twice" is duplicated, and "the later one wins"
    # or "hides" the other shadows it
    ("remove", r"\b(?:is|are|was|were|has\s+been|have\s+been)\s+gone\b|\bno\s+longer\s+(?:exists?|there|present)\b"
               r"|\b(?:does|do)\s*(?:n't|\s+not)\s+exist\s+any\s?more\b|\btaken\s+out\b"),
    ("revoke permission", r"\b(?:remov|delet|t[ao]ok|taken|strip|withdr[ae]w)\w*\s+(?:\S+\s+){0,4}?(?:access|rights?|"
                          r"permissions?|privileges?|grants?)\b|\b(?:access|rights?|permissions?|privileges?|grants?)\s+"
                          r"(?:\S+\s+){0,4}?(?:(?:were|was|got|have\s+been|has\s+been)\s+)?(?:remov|delet|taken|strip|withdr[ae]w)\w*"),
    ("role", r"\b(?:database|db|postgres\w*|sql)\s+(?:login|account|user)s?\b|\blogin\s+role\b"),
    ("require", r"\b(?:needs?|needed)\b"),
    ("scale zero", r"\b(?:asks?\s+for|wants?|runs?|set\s+to|keeps?|down\s+to)\s+(?:0|zero|no)\s+(?:copies|replicas|pods|"
                   r"instances)\b|\b(?:copies|replicas|instances)\s+(?:\S+\s+)?(?:down\s+)?to\s+(?:0|zero)\b"),
    ("open_file", r"\bfiles?\b(?:\s+\S+){0,6}?\s+(?:have|has|keep|keeps)?\s*open\b"),
    ("duplicate", r"\btwice\b|\btwo\s+times\b|\bdefined\s+(?:\S+\s+){0,2}again\b"),
    ("shadow", r"\b(?:second|later|last|other)[\s,]+(?:\S+\s+){0,3}wins\b|\bhides?\b|\bhidden\b"),
    # traffic kept on "the same machine as the caller", "the caller's own node", is local
    ("local", r"\bsame\s+(?:node|machine|host|server)\s+as\b|\b(?:caller|client)s?(?:'s|s')?\s+own\s+(?:node|machine|host)\b"),
    # an admission check said plainly: it "fails closed" (failurePolicy Fail), it "checks/approves every pod"
    # (validating), "nothing runs behind it" (no ready endpoint), it trusts "the wrong authority" (another CA)
    ("failure policy fail", r"\bfails?\s+closed\b|\bfail\s+shut\b|\b(?:refuse|reject|deny|block)\w*\s+(?:\S+\s+){0,2}"
                            r"(?:when|if)\s+(?:it\s+is\s+|in\s+)?(?:unsure|in\s+doubt|doubt\w*|not\s+sure)\b"),
    ("valid", r"\b(?:approv|check|vet|validat|inspect|looks?\s+at|says?\s+yes\s+to)\w*\s+(?:every|each|all|any)\s+(?:new\s+)?"
              r"(?:\S+\s+)?pods?\b"),
    # a check that "must say yes" or "has to approve" fails closed (failurePolicy Fail; tenth round)
    ("failure policy fail", r"\b(?:must|has\s+to|have\s+to)\s+(?:say\s+yes|approve|okay|allow)\b"),
    ("ready endpoint", r"\bno\s+(?:running|live|ready|working)\s+(?:server|pods?|backends?|replicas?)\b"
                       r"|\bnothing\s+(?:running\s+|answering\s+)?behind\s+it\b"),
    ("another", r"\b(?:wrong|other|another)\s+(?:certificate\s+)?(?:authority|issuer)\b"),
    # a limit said as what is allowed ("only allows 4 connections"), below said as "fewer/less than", a pod that
    # "stays Pending" or "cannot be placed" is not scheduled, an address where "no server runs" is unreachable
    ("limit", r"\bonly\s+allows?\b|\ballows?\s+only\b"),
    ("below low", r"\b(?:fewer|less)\s+(?:\S+\s+){0,4}?than\b"),
    ("schedule", r"\b(?:stay|stays|stayed|stuck|remain\w*)\s+(?:in\s+)?pending\b|\bcan(?:not|'t|\s+not)\s+be\s+(?:placed|scheduled)\b"
                 r"|\bnever\s+(?:placed|scheduled)\b"),
    # a probe is its "health check"; a port "nothing listens on" is a misconfigured one; bits "flipped" are corrupt
    ("probe", r"\bhealth\s+checks?\b|\b(?:liveness|readiness|ready|alive)\s+checks?\b"),
    ("misconfigure", r"\b(?:path|port|address|url)s?\s+(?:where\s+)?nothing\s+(?:is\s+)?(?:listen|answer|serv)\w*"),
    ("bad", r"\bflips?\s+(?:\S+\s+)?bits\b|\bbit\s+flips?\b|\bflipped\s+bits\b"),
    ("unreachable", r"\bno\s+(?:dns\s+|name\s+)?server\s+(?:runs|is\s+running|listens|answers)\b|\bcan(?:not|'t)\s+be\s+reached\b"),
    # tenth round (issue #35): a field said by its plain gloss, an effect that follows from the change alone, for every
    # fault whose statement has the concept. A setting "in" a workload's environment is an environment variable; a
    # "storage type" is a storage class, a "storage claim" a volume claim; a thing "named in" a spec is
    # referenced; what "is not there" or "is not offered" is missing; "a kind of machine" asked for is a node label a
    # selector requires
    ("environment variable", r"\bin\s+(?:\S+\s+){0,2}environment\b|\benv(?:ironment)?\s+(?:var\w*|settings?|entry|entries)\b"),
    ("class", r"\bstorage\s+(?:type|kind|tier)s?\b|\b(?:controller|gateway|proxy)\s+(?:type|kind|class)\b"),
    ("persistent volume claim", r"\b(?:storage|volume|disk)\s+claims?\b"),
    ("reference", r"\b(?:named|mentioned|listed|referred\s+to)\s+in\b"),
    ("absent missing", r"\b(?:is|are)\s+not\s+there\b|\b(?:is|are)\s+not\s+(?:available|offered|provided)\s+(?:in|by)\b"
                       r"|\b(?:does|do)\s*(?:not|n't)\s+(?:offer|provide)\b"),
    ("selector require label", r"\b(?:asks?|wants?|requires?|insists?)\s+(?:for|on)\s+(?:a\s+)?(?:kind|type|sort)\s+of\s+"
                               r"(?:node|machine|host|server)s?\b"),
    # the ports a workload "may use for outgoing calls" are its local port range, one "made tiny" a handful; "there is
    # no longer a" thing: it was removed
    ("local", r"\bports?\b(?:\s+\S+){0,6}?\s+(?:for\s+)?(?:outgoing|outbound)\b|\b(?:outgoing|outbound|ephemeral)\s+ports?\b"),
    ("handful", r"\b(?:made|set|cut|shrunk|narrowed)\s+(?:\S+\s+){0,2}(?:tiny|very\s+small|minuscule)\b|\bonly\s+a\s+(?:few|handful)\b"),
    ("remove", r"\bthere\s+is\s+no\s+longer\s+(?:a|an|any)\b"),
    # a rollout that "takes down all" old pods at once with "no extra" new ones: maxUnavailable 100 %, maxSurge 0; its
    # "update settings" are its strategy; a new version that "never starts" hangs
    ("unavailable limit", r"\b(?:take|takes|took|taken|taking|bring|brings|brought|kill|kills|killed)\s+down\s+(?:all|every)\b"
                          r"|\b100\s*(?:%|percent)\s+unavailable\b"),
    ("surge", r"\bno\s+(?:extra|additional|spare|surplus)\s+(?:new\s+)?(?:ones|pods|copies|replicas)\b"),
    ("strategy", r"\b(?:update|rollout)\s+(?:settings?|rules?|policy)\b"),
    ("hang", r"\bnever\s+(?:starts?|finish\w*|completes?|becomes?\s+ready)\b"),
    # a process "only allowed 24" (or "about two dozen") of a thing has a low limit of it
    ("limit", r"\bonly\s+allowed\b"),
    ("low", r"\bonly\s+(?:allowed\s+|gets?\s+|has\s+|have\s+)?(?:about\s+|around\s+|roughly\s+)?(?:\d+|two|three|four|five|"
            r"a\s+few|a\s+couple|(?:two|a)\s+dozen)\b"),
    # a server that "only accepts" one kind of client requires it
    ("require", r"\bonly\s+accepts?\b"),
    # the entries a cache still needs are its "useful" ones
    ("real", r"\buseful\b|\bgenuine\b|\blegitimate\b"),
    # a quantity asked for far beyond what there is was raised past it ("a huge number of copies", "one hundred
    # thousand copies")
    ("raise exceed", r"\b(?:huge|enormous|absurd|insane|ridiculous|impossible)\s+(?:number|count|amount)\s+of\b"
                     r"|\b(?:far|way)\s+too\s+many\b|\bhundreds?\s+(?:of\s+)?thousands?\b"),
    # how many files a process may have open is its open-file limit (ulimit -n): "only open 24 files at once"
    ("descriptor", r"\bfiles?\s+at\s+(?:once|a\s+time)\b|\bopen\s+\d+\s+files\b"),
    ("ulimit", r"\blimit\s+(?:on|of)\s+how\s+many\s+(?:\S+\s+){0,4}(?:open|files?|sockets?|descriptors?)\b"
               r"|\bopen[\s-]+files?\s+limit\b|\bnofile\s+limit\b"),
    # a health check that "starts right away", "runs every second", "gives up after one miss"
    ("initial slow", r"\b(?:starts?|begins?|checks?|probes?)\s+(?:\S+\s+)?(?:right\s+away|immediately|at\s+once|straight\s+away)\b"
                     r"|\bno\s+(?:grace|warm\s?up|start\s?up)\s+(?:time|period|delay)\b"),
    ("period", r"\bevery\s+(?:single\s+)?(?:second|\d+\s*(?:s|sec|seconds))\b|\bonce\s+a\s+second\b"),
    ("failure threshold", r"\b(?:gives?\s+up|fails?|restarts?|kills?)\s+(?:\S+\s+)?after\s+(?:one|a\s+single|1)\s+"
                          r"(?:miss\w*|failure|failed|fail)\b"),
    # a waiting process "stuck waiting" blocks; a call that "returns EIO" fails with an errno
    ("block", r"\bstuck\s+waiting\b|\bwaits?\s+forever\b"),
    ("errno fail", r"\b(?:returns?|gets?|answers?\s+with|fails?\s+with)\s+(?:an?\s+)?e(?:io|nospc|acces|perm|again|intr|busy|"
                   r"rofs|nomem|badf|inval|exist|noent)\b"),
    # sectors that have "gone bad" are latent sector errors (not a whole disk's bad blocks: the sector is said)
    ("latent error", r"\bsectors?\b(?:\s+\S+){0,5}?\s+(?:have\s+|has\s+)?(?:gone|went|going|turned)\s+bad\b"),
    # retries "with no wait in between" have no backoff; "a flood of retries" is a storm, what "turns into" one amplifies
    ("backoff", r"\b(?:no|without\s+(?:any\s+)?)\s*(?:wait|pause|delay)\w*\s+(?:in\s+)?between\b"),
    ("storm", r"\b(?:flood|wave|avalanche|torrent|pile)\s+of\s+retr\w*"),
    ("amplify", r"\b(?:turns?|becomes?|grows?)\s+(?:\S+\s+){0,4}?(?:into\s+)?(?:a\s+)?(?:flood|storm|avalanche)\b"),
    # a rate said per second is a rate; thousands waiting in the queue is a deep queue
    ("rate", r"\brequests?\s+(?:per|a|/)\s*(?:second|sec|s)\b|\b(?:rps|qps)\b"),
    ("deep", r"\b(?:\d{3,}|thousands?|hundreds?)\s+(?:\S+\s+){0,2}(?:wait\w*|queued|queue\s+up)\b|\b(?:long|huge|deep)\s+queue\b"),
    # a switched-on "option" is a flag; a "more important" workload has a higher priority; pods "lost to" it preempted
    ("flag", r"\b(?:option|setting)s?\s+(?:\S+\s+){0,3}(?:switched|turned|flipped)\s+on\b"),
    ("high priority", r"\bmore\s+important\b|\bhigher\s+(?:rank|importance)\b"),
    ("preempt", r"\blos\w*\s+(?:its\s+|their\s+)?pods?\s+to\b"),
    # a Pod Security level said by what it admits: the namespace "only allows" strict pods enforces it
    ("enforce", r"\bonly\s+(?:allows?|admits?|accepts?|lets\s+in)\s+(?:\S+\s+){0,3}(?:strict|hardened|restricted|secure)\b"),
    # a kubelet told to "keep 90% of the disk free" has its hard eviction threshold on available disk raised
    ("hard nodefs available", r"\bkeep\w*\s+(?:at\s+least\s+)?\d+\s*(?:%|percent)\s+(?:of\s+(?:the|its)\s+)?(?:disk|filesystem|storage)\s+free\b"),
    # eleventh round (issue #35), written from ordinary English for every fault whose statement has the concept: a
    # thing that "is not there any more" was removed; a workload "dialled down to 0" or whose spec "says 0 copies" was
    # scaled to zero; calls made "one after another" are serial and what "adds up past" a deadline exceeds it; a "disk
    # type" is a storage class, an "update method" a strategy; "never put two copies on the same machine" is a
    # required anti-affinity; a step that runs "before the main program" is an init container
    ("remove", r"\b(?:is|are)\s*(?:n't|\s+not|\s+no\s+longer)\s+there(?:\s+any\s?more)?\b|\b(?:has|have)\s+no\s+more\b"),
    ("scale zero", r"\b(?:scaled|dialled|dialed|turned|brought|cut|set|taken)\s+down\s+to\s+(?:0|zero|nothing)\b"
                   r"|\b(?:says?|has|have|at|with)\s+(?:0|zero|no)\s+(?:copies|replicas|pods|instances)\b"),
    ("serial", r"\bone\s+after\s+(?:another|the\s+other)\b|\bin\s+(?:a\s+)?(?:sequence|series|row)\b|\bsequential\w*"
               r"|\bback\s+to\s+back\b"),
    ("exceed", r"\badd\w*\s+up\s+(?:past|beyond|to\s+more\s+than|over)\b|\b(?:go|goes|went|run|runs)\s+past\b"),
    ("class", r"\b(?:disk|volume)\s+(?:type|kind|class|tier)s?\b|\b(?:type|kind|class)\s+of\s+(?:disk|storage|volume)s?\b"),
    ("strategy", r"\bupdate\s+(?:method|type|mode|kind|style|approach)s?\b"),
    ("anti affinity require", r"\bnever\s+(?:to\s+)?(?:put|place|run|schedule|land)\w*\s+two\b(?:\s+\S+){0,4}?\s+(?:on|in)\s+"
                              r"(?:the\s+)?same\s+(?:node|machine|host|server)\b"),
    ("init container", r"\bbefore\s+the\s+main\s+(?:program|container|process|app\w*)\b|\b(?:helper|setup|start\s?up|"
                       r"preparation|waiting)\s+step\b"),
    # twenty-second round (issue #35): the count a workload asks for, by any of its names (`spec.replicas`, "desired
    # count", "count of copies"), said to be 0, "= 0", "1 -> 0" or none is scaled to zero; the count that is *ready*,
    # *available* or *current* being 0 is what any fault shows, not this change
    # a thing that "is absent" is gone, as one that "is gone" (twenty-second round)
    ("remove", r"\b(?:is|are|was|were)\s+(?:now\s+)?absent\b"),
    ("scale zero replica", r"(?<!ready\s)(?<!available\s)(?<!current\s)(?<!updated\s)\b(?:spec\.)?(?:replicas?(?:\s+count)?|"
                   r"desired(?:\s+(?:replica|pod))?\s+count|(?:count|number)\s+of\s+(?:copies|replicas|pods|instances))"
                   r"(?:\s+(?:was|is|got|has\s+been))?\s*(?:(?:set|changed|lowered|dropped|scaled|cut)\s+)?"
                   r"(?:=|:|to|at|1\s*(?:->|→|>|to)|(?=0\b))\s*(?:0|zero|none|nothing)\b(?![.,]\d)"),
    # twenty-fourth round (issue #35): a workload "told to run on one machine", "forced to run on", "pinned to" a node is
    # held there by a node selector; its "data disk" is its persistent volume, which "lives on" or "is attached to" one
    # machine (the volume's node affinity); "a different machine", "another node" than that one is outside it
    ("selector", r"\b(?:told|forced|made|set\s+up|configured|pinned|tied|restricted)\s+to\s+(?:only\s+)?run\s+(?:only\s+)?on\b"
                 r"|\bpinned\s+to\b|\brun\s+on\s+this\s+(?:server|machine|node)\b"),
    ("persistent volume", r"\bdata\s+disks?\b|\b(?:local|attached)\s+disks?\b|\bdisks?\s+(?:with|holding)\s+its\s+data\b"),
    ("affinity", r"\b(?:disks?|data|volumes?)\s+(?:\S+\s+){0,2}(?:lives?|sits?|is\s+attached|attached|is)\s+(?:only\s+)?(?:on|to)\b"),
    ("outside", r"\b(?:a\s+|the\s+)?(?:different|another|other)\s+(?:server|machine|node|host)\b"
                r"|\b(?:server|machine|node|host)\s+other\s+than\b|\b(?:machine|node|server|host)\s+that\s+does\s*(?:not|n't)\s+have\s+its\b"),
)

# words every fault statement shares: they count for little on their own
_COMMON = frozenset(
    "pod container service deployment node replica app application cluster kubernetes namespace config "
    "configuration setting value object resource every all some new request call traffic connection "
    "component workload process file user client server make cause causing which with their its into target change set "
    "because when than that this there them from have been were will would also only".split()
)

_PHRASES = sorted({e for line in _FAMILIES for e in line.split() if "_" in e}, key=lambda e: -e.count("_"))
# every word of a phrase may be inflected ("turned on", "switched on", "thrown away"; ninth round of issue #35), as
# :func:`_phrase_key` reads it back
_PHRASE_RE = re.compile(
    r"(?<![a-z0-9])(" + "|".join(r"(?:s|es|ed|d|ing)?\s+".join(re.escape(w) for w in p.split("_")) for p in _PHRASES)
    + r")(?:s|es|ed)?(?![a-z0-9])")


@functools.lru_cache(maxsize=65536)  # a judgement stems the same few thousand words again and again
def stem(word: str) -> str:
    """A crude English stem: plural, past, progressive and comparative endings off, a doubled final consonant
    and a final "e" dropped ("composing" and "compose", "dropped" and "drop", "matches" and "match")."""
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    # a plural or third person first ("answers" is "answer" before it is "answ", as "answer" is), then one ending
    if re.search(r"(?:s|x|z|ch|sh)es$", w) and len(w) >= 6:
        w = w[:-2]
    elif w.endswith("ies") and len(w) >= 6:
        w = w[:-3] + "y"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) >= 4:
        w = w[:-1]
    for suffix in ("ations", "ation", "ings", "ing", "edly", "ied", "ed", "est", "er", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "ed" and w.endswith("eed"):
                break  # "exceed", "need", "speed": no past tense
            w = w[: -len(suffix)] + ("y" if suffix == "ied" else "")
            # "answering" is "answer" + "ing", and "answer" stems to "answ" (as "answers" does): the same stem
            if suffix in ("ings", "ing", "edly", "ed") and w.endswith("er") and len(w) - 2 >= 3:
                w = w[:-2]
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    if len(w) >= 5 and w.endswith("e"):
        w = w[:-1]
    # a verb in -ate and its noun in -ation are one word ("tolerate"/"toleration", "rotated"/"rotation"; eighth round)
    if len(w) >= 5 and w.endswith("at") and re.search(r"at(?:e|es|ed|ing)$", word.lower().strip("'")):
        w = w[:-2]
    return w


@functools.lru_cache(maxsize=1)
def _family_of() -> dict[str, str]:
    owner: dict[str, str] = {}
    for line in _FAMILIES:
        entries = line.split()
        head = stem(entries[0])
        for entry in entries:
            owner.setdefault(entry if "_" in entry else stem(entry), head)
    return owner


def family_of_word(word: str) -> str | None:
    """The concept a single word belongs to ("copies" and "replicas": replica), None for a word of no family."""
    return _family_of().get(stem(word))


def _join_phrases(flat: str) -> str:
    # the joined phrase keeps the length of what it replaces (an ending becomes "_"): offsets stay the flat text's
    return _PHRASE_RE.sub(lambda m: "_".join(m.group(1).split()).ljust(len(m.group(0)), "_"), flat)


def _phrase_key(token: str, family: dict[str, str]) -> str:
    """A joined phrase as its family writes it: "turned_on" is "turn_on", "connected_to" is "connect_to"."""
    if token in family:
        return token
    parts = token.split("_")
    for i, part in enumerate(parts):
        for suffix in ("ing", "ed", "es", "s", "d"):
            if part.endswith(suffix) and len(part) > len(suffix) + 1:
                candidate = "_".join([*parts[:i], part[: -len(suffix)], *parts[i + 1:]])
                if candidate in family:
                    return candidate
    return token


def concepts(flat: str) -> list[tuple[str, int, int]]:
    """The concepts of a flattened text, each with the span of the words that carry it."""
    return list(_concepts(flat))


@functools.lru_cache(maxsize=8192)  # one sentence is read against every mechanism of every truth
def _concepts(flat: str) -> tuple[tuple[str, int, int], ...]:
    family = _family_of()
    out = []
    joined = _join_phrases(flat)
    # offsets in the joined text map back to the flat one word for word (only spaces became "_")
    for match in re.finditer(r"[a-z0-9_']+", joined):
        token = re.sub(r"'s?$", "", match.group(0)).strip("'_")
        if not token:
            continue
        key = _phrase_key(token, family) if "_" in token else stem(token)
        out.append((family.get(key, key), match.start(), match.end()))
    return tuple(out)


def split_compounds(statement: str) -> str:
    """A truth's statement with its camelCase field names also read as words ("hostPort" as "host port",
    "ingressClassName" as "ingress class name"): a diagnosis says the field in words at least as often as by name."""
    return re.sub(r"\b[A-Za-z][a-z]+(?:[A-Z][a-z]+)+\b", lambda m: re.sub(r"(?<=[a-z])(?=[A-Z])", " ", m.group(0)), statement)


@functools.lru_cache(maxsize=2048)
def mechanism_concepts(mechanism: str) -> tuple[tuple[str, float], ...]:
    """The concepts of a fault's mechanism statement with their weights: 1 for a word that tells the fault
    apart, 0.4 for a word every fault shares; words of three letters or fewer (but "eio", "shm", "tls") and
    stop words carry nothing."""
    from .text import flatten

    seen: dict[str, float] = {}
    heads = set(_family_of().values())
    # "the target's pods" is the faulty component's, not a concept of what was done to it (a selector "targets")
    mechanism = re.sub(r"\bthe\s+target's\b", "the component's", mechanism)
    flat = flatten(split_compounds(mechanism))
    # a clause that only says which object ("the ConfigMap *the pods mount* was deleted", "the Secret *holding the
    # credentials* was deleted") describes it: its words count as little as words every fault shares
    described = _DESCRIBING_CLAUSE.search(flat)
    for concept, a, b in concepts(flat):
        if concept in seen or (len(concept) < 3 or (len(concept) == 3 and concept not in heads | _SHORT_TERMS)) or concept in _STOP:
            continue
        inside = described is not None and described.start(1) <= a and b <= described.end(1)
        seen[concept] = 0.4 if concept in _COMMON or concept in _COMMON_STEMS or inside else 1.0
    return tuple(seen.items())


# "the <object> the pods mount was deleted", "a <object> holding the credentials was deleted": the words between the
# object and the predicate only say which object
_DESCRIBING_CLAUSE = re.compile(r"^(?:the|a|an)\s+\S+(?:\s+\S+)??\s+((?:the\s+\S+\s+\S+|(?:that|which)\s+(?:\S+\s+){1,3}?|"
                                r"holding\s+(?:\S+\s+){1,2}?))\s*(?:was|were|is|are|has\s+been)\s+\S+\s*$")


_SHORT_TERMS = frozenset({"eio", "shm", "tls", "dns", "oom", "cpu", "ip", "fd", "ttl", "cidr", "pvc", "rwo"})
_STOP = frozenset({"the", "and", "for", "its", "that", "this", "with", "from", "into", "than", "does", "have", "were",
                   "which", "their", "there", "them", "been", "when", "where", "what", "some", "also", "only", "whose",
                   "whos",
                   # pronouns and determiners say no concept ("serially *they* exceed", "*each* waits out its timeout")
                   "they", "each", "those", "these", "then", "both", "such", "your", "our"})
_COMMON_STEMS = frozenset(stem(w) for w in _COMMON)


@functools.lru_cache(maxsize=1)
def _members() -> dict[str, frozenset[str]]:
    """Per concept, the stems of its one-word members (for reading a misspelt member, :func:`_near`)."""
    out: dict[str, set[str]] = {}
    for key, head in _family_of().items():
        if "_" not in key:
            out.setdefault(head, set()).add(key)
    return {head: frozenset(keys | {head}) for head, keys in out.items()}


@functools.lru_cache(maxsize=65536)
def _near(token: str, target: str) -> bool:
    """Is ``token`` ``target`` misspelt (one edit for a word of six to nine letters, two for a longer one)? A
    non-native writer drops or doubles a letter ("permision", "adress", "certficate") far more often than he writes
    another word one letter away; short words are never read this way (too many real words are one edit apart:
    "ports" and "posts")."""
    if token == target or len(target) < 6 or token[:1] != target[:1]:
        return False
    allowed = 2 if len(target) >= 10 else 1
    if abs(len(token) - len(target)) > allowed:
        return False
    previous = list(range(len(target) + 1))  # Levenshtein distance, row by row, stopped once it exceeds allowed
    for i, a in enumerate(token, 1):
        current = [i]
        for j, b in enumerate(target, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        if min(current) > allowed:
            return False
        previous = current
    return previous[-1] <= allowed


def _misspelt(concept: str, tokens: list[tuple[str, int, int]]) -> tuple[int, int] | None:
    """Where a sentence writes one of the concept's words misspelt."""
    members = _members().get(concept, frozenset({concept}))
    for token, a, b in tokens:
        if len(token) >= 6 and token not in _family_of() and any(_near(token, m) for m in members):
            return a, b
    return None


# a negation that says something is missing, insufficient or unable is a statement of the fault, not a denial of
# one: "not allowed enough open files", "does not have any password", "is not valid anymore", "cannot reach"
_FAULT_NEGATION = re.compile(r"\b(?:not|no|never|cannot|can ?not|without)\b(?:\s+\S+){0,3}?\s+(?:enough|allowed|able|"
                             r"sufficient|valid|any|given|know|knows|have|has|had|get|reach|find|speak|serve|exist|"
                             r"ready|longer|anymore|more)\b")


def negated_in(flat: str, start: int, end: int, mechanism: str, concept: str) -> bool:
    """Is the concept at ``flat[start:end]`` denied? Not when the negation is itself a statement of a fault ("not
    enough", "does not have any", "no longer valid"), nor when the truth states the concept negated too ("a backend
    that does not speak HTTP": a diagnosis saying "does not speak the web protocol" agrees)."""
    from . import reading

    if not reading.negated(flat, start, end):
        return False
    if concept in _negated_concepts(mechanism):
        return False
    return not _FAULT_NEGATION.search(flat[max(0, start - 40): end])


@functools.lru_cache(maxsize=2048)
def _negated_concepts(mechanism: str) -> frozenset[str]:
    """The concepts the truth's own statement states under a negation ("does not speak HTTP", "no ready endpoint")."""
    from .text import flatten

    flat = flatten(split_compounds(mechanism))
    return frozenset(c for c, a, _b in concepts(flat)
                     if re.search(r"\b(?:not|no|never|without|cannot)\b(?:\s+\S+){0,3}\s*$", flat[max(0, a - 30):a]))


# where a statement turns from what was done to what follows from it
_EFFECT = re.compile(r":\s|;\s|,\s*so\b|\s+so\s+(?:that\s+)?(?=\S+\s+(?:fail|cannot|can't|is|are|every))")


def split_effect(statement: str) -> tuple[str, str] | None:
    """A statement's cause part and what it says follows from it, or None when it says no effect."""
    found = _EFFECT.search(statement)
    if not found or not statement[: found.start()].strip() or not statement[found.end():].strip():
        return None
    return statement[: found.start()], statement[found.end():]


def is_cause_part(statement: str) -> bool:
    """Does a statement say only what was done (no effect after ": ", "; ", ", so")?"""
    return not _EFFECT.search(statement)


def statements(mechanism: str, prose: str = "", names: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The truth's own statements of what was done, each read as concepts on its own: the mechanism; its cause
    part (before what it says follows: ": ", "; ", ", so"); and the prose's first sentence likewise, without the
    names of the components (a name is not a concept of the mechanism). A short cause part is easier to carry in
    full than the whole statement with its effects ("... points at another Service (an internal backend) instead
    of the entry Service" without ": user requests reach a backend that ...")."""
    out = [mechanism]
    for text_ in (mechanism, prose.split(". ")[0] if prose else ""):
        cause = _EFFECT.split(text_)[0]
        for name in sorted(names, key=len, reverse=True):
            cause = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", " ", cause, flags=re.I)
        cause = re.sub(r"\s+", " ", cause).strip(" .,")
        if len(cause.split()) >= 3 and cause not in out:
            out.append(cause)
    return tuple(out)


def present(sentence_flat: str, mechanism: str) -> list[tuple[str, tuple[int, int]]]:
    """The mechanism's concepts a sentence carries, each with the span that carries it."""
    return list(_found(sentence_flat, mechanism)[1])


def coverage(sentence_flat: str, mechanism: str) -> tuple[float, int, list[tuple[int, int]]]:
    """How much of the mechanism's meaning a sentence carries: (weighted share of its concepts present, how
    many distinctive concepts are present, the spans of the words that carry them)."""
    wanted, got = _found(sentence_flat, mechanism)
    if not wanted:
        return 0.0, 0, []
    weight = dict(wanted)
    total = sum(w for _c, w in wanted)
    return (sum(weight[c] for c, _s in got) / total, sum(1 for c, _s in got if weight[c] == 1.0), [s for _c, s in got])


@functools.lru_cache(maxsize=16384)  # a sentence meets each truth's statements in several readings of one judgement
def _found(sentence_flat: str, mechanism: str) -> tuple[tuple[tuple[str, float], ...], tuple[tuple[str, tuple[int, int]], ...]]:
    """The mechanism's weighted concepts, and those the sentence carries with their spans."""
    wanted = mechanism_concepts(mechanism)
    if not wanted:
        return wanted, ()
    here: dict[str, tuple[int, int]] = {}
    for concept, a, b in concepts(sentence_flat):
        here.setdefault(concept, (a, b))
    tokens = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"[a-z0-9]{10,}", sentence_flat)]
    for concept, _w in wanted:  # a concept inside a compound word: "anti" and "affinity" in "podantiaffinity"
        if concept not in here and len(concept) >= 4 and "_" not in concept:
            inside = next(((a, b) for token, a, b in tokens if concept in token and token != concept), None)
            if inside:
                here[concept] = inside
    spelled = None
    for concept, _w in wanted:  # a concept's word misspelt ("permision", "certficate")
        if concept not in here:
            spelled = spelled if spelled is not None else [(stem(m.group(0)), m.start(), m.end())
                                                           for m in re.finditer(r"[a-z]{5,}", sentence_flat)]
            near = _misspelt(concept, spelled)
            if near:
                here[concept] = near
    missing = {c for c, _w in wanted if c not in here}
    for carried, pattern in _glosses() if missing else ():
        if carried & missing:
            found = pattern.search(sentence_flat)
            if found:
                for concept in carried & missing:
                    here[concept] = found.span()
                missing -= carried
    more = re.search(r"\s>\s", sentence_flat)
    if more and "more" not in here:
        here["more"] = (more.start() + 1, more.end() - 1)
    return wanted, tuple((c, here[c]) for c, _w in wanted if c in here)


def gloss_spans(sentence_flat: str, mechanism: str) -> list[tuple[int, int]]:
    """Where a sentence says one of the mechanism's concepts by a gloss: a negation inside a gloss ("no two copies may
    share a machine", "does not deliver") is part of how it says the concept, not a denial of the words in it."""
    wanted = {c for c, _w in mechanism_concepts(mechanism)}
    return [found.span() for carried, pattern in _glosses() if carried & wanted
            for found in [pattern.search(sentence_flat)] if found]


@functools.lru_cache(maxsize=1)
def _glosses() -> tuple[tuple[frozenset[str], re.Pattern[str]], ...]:
    family = _family_of()
    return tuple((frozenset(family.get(stem(w), stem(w)) for w in carried.split()), re.compile(pattern))
                 for carried, pattern in _GLOSSES)


@functools.lru_cache(maxsize=2048)
def field_concepts(fields: tuple[str, ...]) -> frozenset[str]:
    """The distinctive concepts of the names of the fields a fault changed (``hostPort``: "port"; ``wrong_service``:
    "wrong"; ``ulimit -n``: "ulimit"): what changed, by the fault's own record of it."""
    from .text import flatten

    out = set()
    for name in fields:
        for concept, _a, _b in concepts(flatten(split_compounds(name))):
            if len(concept) >= 3 and concept not in _STOP and concept not in _COMMON and concept not in _COMMON_STEMS:
                out.add(concept)
    return frozenset(out)

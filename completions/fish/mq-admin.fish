# fish completion for mq-admin. Installed where fish looks (vendor_completions.d, or
# /etc/fish/completions under /usr/local) and loaded when mq-admin is first completed.
# Queue names come from `mq-admin list`, run on the store named by -s/--store on the command line,
# else on the default store if it exists (a missing default store is not created
# just to complete a name).

# __mq_store: prints the store named by -s DIR, -sDIR, --store DIR or
# --store=DIR on the command line before the cursor.
function __mq_store
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l store
    while set -q tokens[1]
        switch $tokens[1]
            case --
                break
            case -s --store
                set -e tokens[1]
                set -q tokens[1]; and set store $tokens[1]
            case '--store=*'
                set store (string replace -- --store= '' $tokens[1])
            case '-s?*'
                set store (string sub -s 3 -- $tokens[1])
        end
        set -e tokens[1]
    end
    string replace -r -- '^~' $HOME $store
end

# __mq_admin_query ARGS...: runs `mq-admin ARGS` on that store, else on the
# default store if it exists, with errors silenced.
function __mq_admin_query
    set -l store (__mq_store)
    if test -n "$store"
        mq-admin --store $store $argv 2>/dev/null
        return
    end
    set -l def $HOME/.local/share/mq
    if test -n "$MQ_STORE"
        set def $MQ_STORE
    else if test -n "$XDG_DATA_HOME"
        set def $XDG_DATA_HOME/mq
    end
    test -e $def/data.mdb; and mq-admin $argv 2>/dev/null
end

# __mq_queues: prints the queue names of that store.
function __mq_queues
    __mq_admin_query list
end

# __mq_admin_words: prints the command (the first operand) and then the operands
# after it, one per line, skipping the common options and their values and the
# options of the commands that take a value.
function __mq_admin_words
    set -l tokens (commandline -opc)
    set -e tokens[1]
    while set -q tokens[1]
        set -l t $tokens[1]
        set -e tokens[1]
        switch $t
            case -s --store --group --owner --label --quota --max-message-size --status --format \
                    --interval -n --count --lease \
                    --max-retries --poison --dedup-window --retry-delay --retry-backoff --retry-delay-max \
                    --retry-jitter --delay --id --ttbr --to \
                    --journal-quota --max-store-size --retention --receive --rate --burst --validation \
                    --error --description \
                    --http --queue --max-connections --request-timeout --idle-timeout \
                    --tls-cert --tls-key --client-ca
                set -e tokens[1]
            case '-*'
            case '*'
                echo $t
        end
    end
end

# __mq_admin_using COMMAND...: true if the command on the line is one of these.
function __mq_admin_using
    set -l words (__mq_admin_words)
    set -q words[1]; and contains -- $words[1] $argv
end

# __mq_admin_help_of GROUP: true when the line is `help GROUP` and a subcommand of GROUP is next.
function __mq_admin_help_of
    set -l words (__mq_admin_words)
    test (count $words) -eq 2; and test "$words[1]" = help; and test "$words[2]" = $argv[1]
end

function __mq_admin_needs_command
    set -l words (__mq_admin_words)
    not set -q words[1]
end

# __mq_admin_needs_operand COMMAND...: true if the command is one of these and
# its operand has not been given yet.
function __mq_admin_needs_operand
    set -l words (__mq_admin_words)
    set -q words[1]; and not set -q words[2]; and contains -- $words[1] $argv
end

# __mq_admin_needs_cursor: true when the cursor name of delete-cursor is next.
function __mq_admin_needs_cursor
    set -l words (__mq_admin_words)
    test "$words[1]" = delete-cursor; and set -q words[2]; and not set -q words[3]
end

# __mq_admin_cursors: the names of the cursors of the queue on the line.
function __mq_admin_cursors
    set -l words (__mq_admin_words)
    for line in (__mq_admin_query cursors)
        set -l fields (string split \t -- $line)
        test "$fields[1]" = "$words[2]"; and echo $fields[2]
    end
end

complete -c mq-admin -f
complete -c mq-admin -s h -l help -d 'Print help and exit'
complete -c mq-admin -l version -d 'Print version and exit'
complete -c mq-admin -s s -l store -x -a '(__fish_complete_directories (commandline -ct))' -d 'Store directory'
complete -c mq-admin -n __mq_admin_needs_command -s q -l quiet -d 'Print no summary line and no progress line'

complete -c mq-admin -n __mq_admin_needs_command -a init -d 'Create the store'
complete -c mq-admin -n __mq_admin_needs_command -a create -d 'Create a queue'
complete -c mq-admin -n __mq_admin_needs_command -a set -d "Change a queue's settings"
complete -c mq-admin -n __mq_admin_needs_command -a delete -d 'Delete a queue and everything in it'
complete -c mq-admin -n __mq_admin_needs_command -a list -d 'List the queues'
complete -c mq-admin -n __mq_admin_needs_command -a stat -d 'Counts, bytes and oldest message age'
complete -c mq-admin -n __mq_admin_needs_command -a top -d 'Watch the store live: counts, rates, links, leases'
complete -c mq-admin -n '__mq_admin_using top' -a '(__mq_queues)' -d queue
complete -c mq-admin -n '__mq_admin_using top' -l interval -x -d 'Time between refreshes (e.g. 500ms, 2s)'
complete -c mq-admin -n '__mq_admin_using top' -s n -l count -x -d 'Stop after COUNT refreshes'
complete -c mq-admin -n '__mq_admin_using top' -l json -d 'One JSON object per refresh'
complete -c mq-admin -n '__mq_admin_using top' -l format -x -a 'text json' -d 'Output format'
complete -c mq-admin -n __mq_admin_needs_command -a purge -d 'Remove every message of a queue'
complete -c mq-admin -n __mq_admin_needs_command -a check -d "Verify the store's indexes and counters"
complete -c mq-admin -n __mq_admin_needs_command -a backup -d 'Hot, consistent copy of the store'
complete -c mq-admin -n __mq_admin_needs_command -a compact -d 'Rewrite the store to its live size'
complete -c mq-admin -n '__fish_seen_subcommand_from compact' -s w -l wait -r -d 'How long to wait for other users to leave'
complete -c mq-admin -n __mq_admin_needs_command -a upgrade -d 'Bring the store to this mq\'s format'
complete -c mq-admin -n '__fish_seen_subcommand_from upgrade' -s w -l wait -r -d 'How long to wait for other users to leave'
complete -c mq-admin -n __mq_admin_needs_command -a export -d 'Print every message of a queue as JSON lines or SRMP documents'
complete -c mq-admin -n __mq_admin_needs_command -a import -d 'Append messages from JSON lines or SRMP documents on stdin'
complete -c mq-admin -n __mq_admin_needs_command -a cursors -d 'List the named cursors'
complete -c mq-admin -n __mq_admin_needs_command -a delete-cursor -d 'Forget a named cursor'
complete -c mq-admin -n __mq_admin_needs_command -a sweep -d 'Make due delayed messages visible, expire messages, return stale leases'
complete -c mq-admin -n __mq_admin_needs_command -a ack -d 'Commit a lease: remove its messages'
complete -c mq-admin -n __mq_admin_needs_command -a nack -d 'Roll back a lease: return its messages'
complete -c mq-admin -n __mq_admin_needs_command -a touch -d 'Extend a lease: keep its messages Locked longer'
complete -c mq-admin -n '__mq_admin_using touch' -l lease -x -d 'The lease ends DURATION from now'
complete -c mq-admin -n __mq_admin_needs_command -a locks -d 'List open transactional receives and leases'
complete -c mq-admin -n __mq_admin_needs_command -a requeue -d 'Move poison or dead-letter messages back'
complete -c mq-admin -n __mq_admin_needs_command -a move -d 'Move a message to a subqueue, keeping its lookup id'
complete -c mq-admin -n __mq_admin_needs_command -a message-type -d 'Create, delete, list or check message types'
complete -c mq-admin -n __mq_admin_needs_command -a end-conversation -d 'End a conversation: queue EndDialog or Error'
complete -c mq-admin -n __mq_admin_needs_command -a conversations -d 'List conversations and their groups'
complete -c mq-admin -n '__mq_admin_needs_operand message-type' -a 'create delete list check' -d action

complete -c mq-admin -n '__mq_admin_needs_operand set delete stat purge export import delete-cursor requeue move' -a '(__mq_queues)' -d queue
complete -c mq-admin -n __mq_admin_needs_cursor -a '(__mq_admin_cursors)' -d cursor
complete -c mq-admin -n '__mq_admin_needs_operand backup' -a '(__fish_complete_directories (commandline -ct))'

complete -c mq-admin -n '__mq_admin_using init' -l group -x -a '(__fish_complete_groups)' -d 'Make the store shared by the members of GROUP'
complete -c mq-admin -n '__mq_admin_using init' -l owner -x -a '(__fish_complete_users)' -d "Make the store USER's (root only)"
complete -c mq-admin -n '__mq_admin_using init' -l max-store-size -x -d 'Let the store grow by itself up to SIZE (0: no limit but 1TiB)'
complete -c mq-admin -n '__mq_admin_using create' -l exist-ok -d 'Succeed if the queue exists with the settings given (as mkdir -p)'
complete -c mq-admin -n '__mq_admin_using create' -l label -x -d 'Queue label, at most 124 characters'
complete -c mq-admin -n '__mq_admin_using create' -l quota -x -d 'Maximum bytes of messages in the queue; 0: no limit'
complete -c mq-admin -n '__mq_admin_using create' -l max-message-size -x -d 'Largest body accepted (default 4MiB)'
complete -c mq-admin -n '__mq_admin_using create' -l transactional -d 'Accept only transactional sends (mq-send --tx)'
complete -c mq-admin -n '__mq_admin_using create' -l max-retries -x -d 'Rollbacks before the poison action runs (default 5; 0: never)'
complete -c mq-admin -n '__mq_admin_using create' -l poison -x -a 'subqueue deadletter disable' -d 'Poison action'
complete -c mq-admin -n '__mq_admin_using create' -l dedup-window -x -d 'How long mq-send --dedup remembers a key (default 5m)'
complete -c mq-admin -n '__mq_admin_using create' -l retry-delay -x -d 'A rolled-back message is visible again after DURATION'
complete -c mq-admin -n '__mq_admin_using create' -l journal -d 'Keep a copy of every received message in QUEUE;journal'
complete -c mq-admin -n '__mq_admin_using create' -l journal-quota -x -d 'Maximum bytes of QUEUE;journal; 0: no limit'
complete -c mq-admin -n '__mq_admin_using set' -l label -x -d 'Queue label, at most 124 characters'
complete -c mq-admin -n '__mq_admin_using set' -l quota -x -d 'Maximum bytes of messages in the queue; 0: no limit'
complete -c mq-admin -n '__mq_admin_using set' -l max-message-size -x -d 'Largest body accepted (default 4MiB)'
complete -c mq-admin -n '__mq_admin_using set' -l status -x -a 'on off' -d 'on: enabled; off: no sends or receives'
complete -c mq-admin -n '__mq_admin_using set' -l max-retries -x -d 'Rollbacks before the poison action runs (default 5; 0: never)'
complete -c mq-admin -n '__mq_admin_using set' -l poison -x -a 'subqueue deadletter disable' -d 'Poison action'
complete -c mq-admin -n '__mq_admin_using set' -l dedup-window -x -d 'How long mq-send --dedup remembers a key (default 5m)'
complete -c mq-admin -n '__mq_admin_using set' -l retry-delay -x -d 'A rolled-back message is visible again after DURATION'
complete -c mq-admin -n '__mq_admin_using set' -l journal -d 'Keep a copy of every received message in QUEUE;journal'
complete -c mq-admin -n '__mq_admin_using set' -l no-journal -d 'Stop keeping journal copies'
complete -c mq-admin -n '__mq_admin_using set' -l journal-quota -x -d 'Maximum bytes of QUEUE;journal; 0: no limit'
complete -c mq-admin -n '__mq_admin_using list' -l json -d 'One JSON object per queue'
complete -c mq-admin -n '__mq_admin_using stat' -l json -d 'One JSON object per queue'
complete -c mq-admin -n '__mq_admin_using stat' -l format -x -a 'text json prometheus' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using export' -l format -x -a 'json srmp' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using import' -l format -x -a 'json srmp' -d 'Input format'
complete -c mq-admin -n '__mq_admin_using import' -l create -d 'Create the queue if it is missing'
complete -c mq-admin -n '__mq_admin_using import' -l new-ids -d 'Give the messages new ids'
complete -c mq-admin -n '__mq_admin_using cursors' -l json -d 'One JSON object per cursor'
complete -c mq-admin -n '__mq_admin_using nack' -l delay -x -d 'Return the messages after DURATION'
complete -c mq-admin -n '__mq_admin_using locks' -l json -d 'One JSON object per lease'
complete -c mq-admin -n '__mq_admin_using requeue' -l id -x -d 'Only this message'
complete -c mq-admin -n '__mq_admin_using requeue' -l all -d 'Every message (the default)'
complete -c mq-admin -n '__mq_admin_using requeue' -l ttbr -x -a infinite -d 'New time to be received, from now'
complete -c mq-admin -n '__mq_admin_using move' -l to -x -a '(__mq_queues)' -d 'The subqueue: NAME or QUEUE;NAME'
complete -c mq-admin -n '__mq_admin_using create' -l retention -x -a 'on off' -d 'Keep received messages, status 0 (RETENTION)'
complete -c mq-admin -n '__mq_admin_using set' -l retention -x -a 'on off' -d 'Keep received messages, status 0 (RETENTION)'
complete -c mq-admin -n '__mq_admin_using create set' -l retry-backoff -x -a '1.5 2 3' -d 'Multiply the retry delay by FACTOR after each rollback'
complete -c mq-admin -n '__mq_admin_using create set' -l retry-delay-max -x -d 'The longest retry delay backoff reaches'
complete -c mq-admin -n '__mq_admin_using create set' -l retry-jitter -x -a '0.1 0.2 0.5' -d 'Shorten each retry delay by a random part of up to FRACTION'
complete -c mq-admin -n '__mq_admin_using create set' -l receive -x -a 'on off' -d 'off: pause receiving, sends go on; on: resume'
complete -c mq-admin -n '__mq_admin_using create set' -l rate -x -a 'off 10/s 100/m 5/h' -d 'At most COUNT messages leave per PERIOD'
complete -c mq-admin -n '__mq_admin_using create set' -l burst -x -d 'How many messages of the rate may leave at once'
complete -c mq-admin -n '__mq_admin_using message-type' -l validation -x -a 'none empty well-formed-xml' -d 'What a body must be'
complete -c mq-admin -n '__mq_admin_using message-type' -l json -d 'One JSON object per message type'
complete -c mq-admin -n '__mq_admin_using message-type' -s 0 -l null -d 'Bodies end with a NUL byte (check)'
complete -c mq-admin -n '__mq_admin_using end-conversation' -l error -x -d 'End with an error: queue the Error message with CODE'
complete -c mq-admin -n '__mq_admin_using end-conversation' -l description -x -d "The error's description"
complete -c mq-admin -n '__mq_admin_using conversations' -l json -d 'One JSON object per conversation'
complete -c mq-admin -n '__mq_admin_using list' -l format -x -a 'text json' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using cursors' -l format -x -a 'text json' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using locks' -l format -x -a 'text json' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using conversations' -l format -x -a 'text json' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using message-type' -l format -x -a 'text json' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using import' -l format -x -a json -d 'Input format'
complete -c mq-admin -n __mq_admin_needs_command -a bridge -d 'Move messages to and from RabbitMQ, exactly once'
complete -c mq-admin -n __mq_admin_needs_command -a help -d "Print the overview, or a command's options"
complete -c mq-admin -n '__mq_admin_using help; and test (count (__mq_admin_words)) -eq 1' -a 'init create set delete list stat top purge check backup compact upgrade export import cursors delete-cursor sweep ack nack touch locks requeue move message-type end-conversation conversations bridge link forward accept serve' -d 'Command'
complete -c mq-admin -n '__mq_admin_help_of bridge' -a 'out in' -d 'Direction'
complete -c mq-admin -n '__mq_admin_help_of link' -a 'add set delete list stat' -d 'Action'
complete -c mq-admin -n '__mq_admin_help_of message-type' -a 'create delete list check' -d 'Action'
complete -c mq-admin -n '__mq_admin_using bridge' -f -a 'out in' -d 'Direction'
complete -c mq-admin -n __mq_admin_needs_command -a link -d 'Links to other stores'
complete -c mq-admin -n __mq_admin_needs_command -a forward -d 'Move messages waiting for a link to its far store'
complete -c mq-admin -n __mq_admin_needs_command -a accept -d 'The far end of a link'
complete -c mq-admin -n '__mq_admin_using accept' -l idle-timeout -x -d 'End the session after the sender is silent this long (default 5m)'
complete -c mq-admin -n __mq_admin_needs_command -a serve -d 'Take the messages MSMQ sends over HTTP and store them'
complete -c mq-admin -n '__mq_admin_using serve' -l http -x -d 'Listen on ADDR:PORT (:PORT for every address; port 0: a free one)'
complete -c mq-admin -n '__mq_admin_using serve' -l queue -x -a '(__mq_queues)' -d 'Take messages for QUEUE only (repeatable)'
complete -c mq-admin -n '__mq_admin_using serve' -l max-connections -x -d 'Connections served at once (default 64)'
complete -c mq-admin -n '__mq_admin_using serve' -l request-timeout -x -d 'Answer 408 to a request not read whole within DURATION (default 60s)'
complete -c mq-admin -n '__mq_admin_using serve' -l idle-timeout -x -d 'Close a connection silent this long (default 2m)'
complete -c mq-admin -n '__mq_admin_using serve' -l tls-cert -r -d 'Serve HTTPS with this certificate (PEM)'
complete -c mq-admin -n '__mq_admin_using serve' -l tls-key -r -d 'The private key of --tls-cert (PEM)'
complete -c mq-admin -n '__mq_admin_using serve' -l client-ca -r -d 'Require a client certificate these CAs signed (PEM)'
complete -c mq-admin -n '__mq_admin_using link' -f -a 'add set delete list stat' -d 'Action'
complete -c mq-admin -n '__mq_admin_using link' -l via -x -d 'Command that reaches mq-admin accept'
complete -c mq-admin -n '__mq_admin_using link' -l url -x -d 'HTTP link: the far MSMQ HTTP endpoint, http[s]://HOST[:PORT]/msmq'
complete -c mq-admin -n '__mq_admin_using link' -l receipts-url -x -d 'Where the far side posts stream receipts (a queue URL of this store serve)'
complete -c mq-admin -n '__mq_admin_using link' -l return -x -d 'The far store link back'
complete -c mq-admin -n '__mq_admin_using link' -l force -d 'Delete with messages waiting'
complete -c mq-admin -n '__mq_admin_using link' -l json -d 'One JSON object per link'
complete -c mq-admin -n '__mq_admin_using link' -l format -x -a 'text json prometheus' -d 'Output format'
complete -c mq-admin -n '__mq_admin_using forward' -l once -d 'Stop when the outgoing queue is empty'
complete -c mq-admin -n '__mq_admin_using forward' -l follow -d 'Keep forwarding until a signal'
complete -c mq-admin -n '__mq_admin_using forward' -l window -x -d 'Messages unacknowledged at most'
complete -c mq-admin -n '__mq_admin_using forward' -l compress -x -a 'auto always never' -d 'Compress the messages'
complete -c mq-admin -n '__mq_admin_using forward' -l retry -x -d 'How long to retry with --once'
complete -c mq-admin -n '__mq_admin_using forward' -l timeout -x -d 'Waiting for the far side'
complete -c mq-admin -n '__mq_admin_using forward' -l connections -x -d 'HTTP link: POSTs in flight at once (default 16)'
complete -c mq-admin -n '__mq_admin_using forward' -l cacert -r -d 'CA certificates (PEM) for an https:// link'
complete -c mq-admin -n '__mq_admin_using bridge' -l amqp -x -d 'Broker URL'
complete -c mq-admin -n '__mq_admin_using bridge' -l credentials -r -d 'File with USER:PASSWORD'
complete -c mq-admin -n '__mq_admin_using bridge' -l cacert -r -d 'CA certificates (PEM)'
complete -c mq-admin -n '__mq_admin_using bridge' -l cert -r -d 'Client certificate (PEM)'
complete -c mq-admin -n '__mq_admin_using bridge' -l key -r -d 'Client private key (PEM)'
complete -c mq-admin -n '__mq_admin_using bridge' -l batch -x -d 'Messages per store transaction'
complete -c mq-admin -n '__mq_admin_using bridge' -l retry -x -d 'How long to keep reconnecting'
complete -c mq-admin -n '__mq_admin_using bridge' -l timeout -x -d 'Connect and reply timeout'
complete -c mq-admin -n '__mq_admin_using bridge' -l exchange -x -d 'bridge out: AMQP exchange'
complete -c mq-admin -n '__mq_admin_using bridge' -l routing-key -x -d 'bridge out: routing key'
complete -c mq-admin -n '__mq_admin_using bridge' -l from -x -d 'bridge in: AMQP queue'
complete -c mq-admin -n '__mq_admin_using bridge' -l prefetch -x -d 'bridge in: deliveries ahead of acks'
complete -c mq-admin -n '__mq_admin_using bridge' -l dedup-window -x -d 'bridge in: how long message ids are remembered'
complete -c mq-admin -n '__mq_admin_using bridge' -l once -d 'Stop when the source is empty'
complete -c mq-admin -n '__mq_admin_using bridge' -l follow -d 'Keep moving messages until a signal'
complete -c mq-admin -n '__mq_admin_using bridge' -l declare -d 'Declare the quorum queue, exchange and binding'
complete -c mq-admin -n '__mq_admin_using purge' -s q -l quiet -d 'Print no summary line and no progress line'
complete -c mq-admin -n '__mq_admin_using export' -s q -l quiet -d 'Print no summary line and no progress line'
complete -c mq-admin -n '__mq_admin_using import' -s q -l quiet -d 'Print no summary line and no progress line'
complete -c mq-admin -n '__mq_admin_using backup' -s q -l quiet -d 'Print no summary line and no progress line'
complete -c mq-admin -n '__mq_admin_using compact' -s q -l quiet -d 'Print no summary line and no progress line'
complete -c mq-admin -n '__mq_admin_using upgrade' -s q -l quiet -d 'Print no summary line and no progress line'

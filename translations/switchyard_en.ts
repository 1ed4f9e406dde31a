<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
<context>
    <name>Format</name>
    <message>
        <location filename="../ui/Format.cpp" line="18"/>
        <source>%1 s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="21"/>
        <source>%1 min</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="24"/>
        <source>%1 h %2 min</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="25"/>
        <source>%1 d %2 h</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="33"/>
        <source>now</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="34"/>
        <source>in %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="56"/>
        <source>Active</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="58"/>
        <source>Rate limited</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="60"/>
        <source>Quota exceeded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="62"/>
        <source>Paused</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="64"/>
        <source>Needs login</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="66"/>
        <source>Deactivated</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="73"/>
        <source>Preparing</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="75"/>
        <source>Routing</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="77"/>
        <source>Queued</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="79"/>
        <source>Connecting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="81"/>
        <source>Waiting for response</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="83"/>
        <source>Streaming</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="85"/>
        <source>Settling</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>NoticeDiff</name>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="16"/>
        <source>All accounts are limited</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="17"/>
        <source>No account can take requests until the earliest reset at %1 (%2).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="19"/>
        <source>No account can take requests until a limit resets.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="28"/>
        <source>%1 needs a new login</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="29"/>
        <source>Its tokens no longer work. Use &quot;Add account…&quot; to log in again.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="36"/>
        <source>%1 hit its limit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="37"/>
        <source>New requests go to the other accounts until it resets at %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="38"/>
        <source>New requests go to the other accounts.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <location filename="../app/GuiMain.cpp" line="66"/>
        <location filename="../app/GuiMain.cpp" line="85"/>
        <source>Switchyard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="67"/>
        <source>The configuration cannot be used:
%1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::AccountOnboarding</name>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="21"/>
        <source>Account added</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="21"/>
        <source>Login failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="21"/>
        <source>Logged in: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="49"/>
        <source>Add account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="50"/>
        <source>Finish the login in the browser window that just opened.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="51"/>
        <source>Open this address in a browser on this computer to log in:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="64"/>
        <source>Import auth.json</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="66"/>
        <source>Codex auth files (*.json);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="76"/>
        <source>Accounts imported</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="76"/>
        <source>Import failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="77"/>
        <source>Imported: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::AccountsModel</name>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="66"/>
        <source>%1 · resets %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="102"/>
        <source>%1 (pinned)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="109"/>
        <source>%1 (backoff %2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="132"/>
        <source>Account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="134"/>
        <source>Email</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="136"/>
        <source>Plan</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="138"/>
        <source>Status</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="140"/>
        <source>5 h used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="142"/>
        <source>Weekly used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="144"/>
        <source>Last used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="146"/>
        <source>Token expires</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::AccountsPage</name>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="23"/>
        <source>Remove account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="48"/>
        <source>Pin</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="49"/>
        <source>Automatic</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="50"/>
        <source>Pause</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="51"/>
        <source>Resume</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="52"/>
        <source>Log in again…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="53"/>
        <source>Remove…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="55"/>
        <source>Add account…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="56"/>
        <source>Import auth.json…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="72"/>
        <source>Remove %1 and its stored tokens? Its request history stays.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::ApiKeysModel</name>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="66"/>
        <source>Active</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="68"/>
        <source>Expired</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="70"/>
        <source>Revoked</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="92"/>
        <source>Revoked %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="105"/>
        <location filename="../ui/models/ApiKeysModel.cpp" line="107"/>
        <source>Never</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="110"/>
        <source>None</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="111"/>
        <source>%1 tokens per %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="115"/>
        <source>%1 (%2%)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="130"/>
        <source>Name</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="132"/>
        <source>Key id</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="134"/>
        <source>State</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="136"/>
        <source>Created</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="138"/>
        <source>Expires</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="140"/>
        <source>Last used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="142"/>
        <source>Token limit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="144"/>
        <source>Used in window</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::ApiKeysPage</name>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="55"/>
        <source>Revoke API key</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="80"/>
        <source>Create key…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="82"/>
        <source>Revoke…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="146"/>
        <source>The API keys cannot be read: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="190"/>
        <source>Whether the proxy needs API keys is not known: it does not answer and the configuration file cannot be used (%1).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="197"/>
        <source>No API key is needed: the proxy listens on %1, a loopback address that only programs on this computer can reach. Keys take effect when it listens on another address or when require_api_key is set.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="202"/>
        <source>API keys are required: the proxy listens on %1, which other computers can reach. Every proxy request needs a valid key; without one it gets 401.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="206"/>
        <source>API keys are required: require_api_key is set, so even programs on this computer need a valid key for the proxy on %1; without one they get 401.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="210"/>
        <source>No key is active: every proxy request is refused until you create one.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="213"/>
        <source>(From the configuration file %1: the proxy does not answer.)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="249"/>
        <source>Creating the key…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="258"/>
        <source>Not created: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="261"/>
        <source>API key %1 created.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="276"/>
        <source>Revoke the API key %1? Clients using it get 401 from their next request; this cannot be undone.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="284"/>
        <source>Not revoked: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::CreateApiKeyDialog</name>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="24"/>
        <source>Create API key</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="29"/>
        <source>optional, e.g. laptop or ci</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="30"/>
        <source>Name</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="32"/>
        <source>Expires after</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="39"/>
        <source> days</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="42"/>
        <source>Token limit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="47"/>
        <source>tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="51"/>
        <source>per %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="57"/>
        <source>Tokens count over a sliding window, as the request log books them; a request that arrives when the window&apos;s tokens reach the limit gets 429.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="69"/>
        <source>Create</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="110"/>
        <source>Not created: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::DashboardWindow</name>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="22"/>
        <source>Switchyard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="32"/>
        <source>Overview</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="33"/>
        <source>Accounts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="34"/>
        <source>Live</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="35"/>
        <source>Usage</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="36"/>
        <source>Requests</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="37"/>
        <source>API keys</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="38"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="44"/>
        <source>Not done: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="49"/>
        <source>The proxy answers again.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="49"/>
        <source>The proxy does not answer.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::LivePage</name>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="58"/>
        <location filename="../ui/pages/LivePage.cpp" line="91"/>
        <source>Request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="59"/>
        <source>Route</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="60"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="61"/>
        <location filename="../ui/pages/LivePage.cpp" line="84"/>
        <source>Account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="62"/>
        <source>Stage</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="64"/>
        <source>Elapsed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="66"/>
        <source>Next deadline</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="67"/>
        <source>Remaining per budget</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="69"/>
        <source>Attempts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="79"/>
        <source>%1 (%2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="86"/>
        <source>Slot</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="87"/>
        <source>State</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="88"/>
        <source>Replica</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="89"/>
        <source>Epoch</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="90"/>
        <source>Lease expires</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="96"/>
        <source>Waiting for the proxy…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="103"/>
        <source>In-flight turns</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="108"/>
        <location filename="../ui/pages/LivePage.cpp" line="146"/>
        <source>Owner slots</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="119"/>
        <source>The proxy does not answer: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pages/LivePage.cpp" line="126"/>
        <source>%1 · version %2 · %n turn(s) in flight</source>
        <translation>
            <numerusform>%1 · version %2 · %n turn in flight</numerusform>
            <numerusform>%1 · version %2 · %n turns in flight</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="129"/>
        <source> · draining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="147"/>
        <source>Owner slots · this replica %1 (incarnation %2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="152"/>
        <source>Owner slots: not reported by this proxy</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::OverviewPage</name>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="22"/>
        <source>Capacity weighted</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="24"/>
        <source>Usage weighted</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="26"/>
        <source>Round robin</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="28"/>
        <source>Fill first</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="48"/>
        <source>Not enough observations in the last hour</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="49"/>
        <source>%1 % per hour</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="51"/>
        <source>%1 · no exhaustion in sight</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="54"/>
        <source>%1 · lasts until the reset %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="55"/>
        <source>%1 · runs out %2 (%3)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="73"/>
        <source>%p% remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="78"/>
        <source>5 h window (pooled)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="79"/>
        <source>5 h remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="80"/>
        <source>5 h pace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="81"/>
        <source>Weekly window (pooled)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="82"/>
        <source>Weekly remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="83"/>
        <source>Weekly pace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="84"/>
        <source>Requests today</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="85"/>
        <source>Tokens today</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="86"/>
        <source>Errors today</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="87"/>
        <source>Strategy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="88"/>
        <source>Pinned account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="89"/>
        <source>Proxy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="94"/>
        <source>Not answering (%1)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="113"/>
        <source>Database problem: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="129"/>
        <source>%1 (input %2, cached %3, output %4)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="138"/>
        <source>None (automatic)</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pages/OverviewPage.cpp" line="149"/>
        <source>Listening on %1 · %n turn(s) in flight</source>
        <translation>
            <numerusform>Listening on %1 · %n turn in flight</numerusform>
            <numerusform>Listening on %1 · %n turns in flight</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="151"/>
        <source> · store unavailable: %1 (new requests get 503 until it is writable again)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::RequestDetailView</name>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="17"/>
        <source>%1 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="31"/>
        <source>Field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="31"/>
        <source>Value</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="62"/>
        <source>Request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="63"/>
        <source>Request id</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="64"/>
        <source>Started</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="66"/>
        <source>Route</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="67"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="68"/>
        <source>Session</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="69"/>
        <source>Status</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="70"/>
        <source>Killed by budget</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="71"/>
        <source>Error code</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="72"/>
        <source>Upstream request id</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="74"/>
        <source>Routing decision</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="75"/>
        <source>Served by</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="75"/>
        <source>no account was chosen</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="77"/>
        <source>Skipped candidates</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="77"/>
        <source>none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="82"/>
        <source>Skipped %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="84"/>
        <source>Skipped</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="87"/>
        <source>Attempts (%1)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="90"/>
        <source>#%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="91"/>
        <source>Outcome</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="92"/>
        <source>Egress proxy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="92"/>
        <source>direct</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="93"/>
        <source>Elapsed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="97"/>
        <source>Latency</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="98"/>
        <source>Queue</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="99"/>
        <source>Connect</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="100"/>
        <source>First event</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="101"/>
        <location filename="../ui/pages/RequestDetailView.cpp" line="108"/>
        <source>Total</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="103"/>
        <source>Tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="104"/>
        <source>Input</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="105"/>
        <source>Cached</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="106"/>
        <source>Output</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="107"/>
        <source>Reasoning</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::RequestsModel</name>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="183"/>
        <source>%1 (%2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="202"/>
        <source>Started</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="204"/>
        <source>Request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="206"/>
        <source>Route</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="208"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="210"/>
        <source>Account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="212"/>
        <source>Status</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="214"/>
        <source>Attempts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="216"/>
        <source>Total ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="218"/>
        <source>Tokens</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::RequestsPage</name>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="34"/>
        <source>All accounts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="37"/>
        <source>Any status</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="42"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="45"/>
        <source>Any time</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="46"/>
        <source>Last hour</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="47"/>
        <source>Last 24 hours</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="48"/>
        <source>Last 7 days</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="49"/>
        <source>Last 30 days</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="52"/>
        <source>Search request id</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pages/RequestsPage.cpp" line="98"/>
        <source>%n matching request(s)</source>
        <translation>
            <numerusform>%n matching request</numerusform>
            <numerusform>%n matching requests</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="101"/>
        <source>Cannot read the log: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::SettingsPage</name>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="58"/>
        <source>Proxy (configuration file %1)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="62"/>
        <source>Listen address</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="67"/>
        <source>Strategy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="70"/>
        <source>Per-stage budgets</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="82"/>
        <source>pre_response (derived)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="85"/>
        <source>Desktop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="87"/>
        <source>Launch at login</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="89"/>
        <source>Start hidden (tray icon only)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="93"/>
        <source>System language</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="98"/>
        <source>None</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="99"/>
        <source>5 h remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="100"/>
        <source>Weekly remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="101"/>
        <source>Lowest remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="102"/>
        <source>Pinned account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="105"/>
        <source>Language (after a restart)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="106"/>
        <source>Tray number</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="113"/>
        <source>Save</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="178"/>
        <source>%1 s (from gate_retire_s, keepalive cadence, stream_idle_s and request_total_s)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="180"/>
        <source>Saved changes apply to the next request; a new listen address needs a restart.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="183"/>
        <location filename="../ui/pages/SettingsPage.cpp" line="191"/>
        <source>Not saved: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="196"/>
        <source>Launch at login not changed: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="204"/>
        <source>Saved to %1. The running proxy applies it within a second (a new listen address after a restart).</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::ShownApiKeyDialog</name>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="121"/>
        <source>API key %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="123"/>
        <source>&lt;b&gt;Copy this key now: you will not see it again.&lt;/b&gt; Switchyard keeps only a hash of it. If it is lost, revoke it and create a new one.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="138"/>
        <source>Copy to clipboard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="143"/>
        <source>Clients send it as &quot;Authorization: Bearer &lt;key&gt;&quot; (the API key setting of OpenAI-compatible clients) or as &quot;x-api-key: &lt;key&gt;&quot;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="156"/>
        <source>Copied</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::StoreClient</name>
    <message>
        <location filename="../ui/data/StoreClient.cpp" line="241"/>
        <source>API key %1 created.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/data/StoreClient.cpp" line="252"/>
        <source>No API key %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/data/StoreClient.cpp" line="253"/>
        <source>API key %1 revoked: requests with it get 401 from now on.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::TrayController</name>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="26"/>
        <source>Serving</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="28"/>
        <source>Serving with problems</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="30"/>
        <source>All accounts limited</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="32"/>
        <source>Paused</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="34"/>
        <source>Stopped</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="49"/>
        <source>%1 — %2 · 5 h %3 used · weekly %4 used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="87"/>
        <source>Automatic (balance across accounts)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="96"/>
        <location filename="../ui/tray/TrayController.cpp" line="202"/>
        <source>Pause proxy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="100"/>
        <source>Add account…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="103"/>
        <source>Import auth.json…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="106"/>
        <source>Open dashboard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="110"/>
        <source>Copy client config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="124"/>
        <source>Write Codex CLI config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="125"/>
        <source>Undo Codex CLI config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="126"/>
        <source>Write OpenCode config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="127"/>
        <source>Undo OpenCode config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="129"/>
        <source>Tray number</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="132"/>
        <source>None</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="133"/>
        <source>5 h remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="134"/>
        <source>Weekly remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="135"/>
        <source>Lowest remaining</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="136"/>
        <source>Pinned account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="148"/>
        <source>Quit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="202"/>
        <source>Resume proxy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="248"/>
        <source>Switchyard — %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="255"/>
        <source>%1%2: 5 h %3 used, weekly %4 used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="256"/>
        <source> (pinned)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="287"/>
        <source> (set SWITCHYARD_API_KEY for Codex)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="294"/>
        <source>OpenCode config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="305"/>
        <source>%1 already uses Switchyard.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="305"/>
        <source>%1 has no Switchyard settings.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="307"/>
        <source>%1 now uses Switchyard%2. The previous file is in %3.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="308"/>
        <source>(none: the file is new)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="310"/>
        <source>Switchyard was taken out of %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="287"/>
        <source>Codex CLI config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="251"/>
        <source>Store unavailable: %1 — new requests are refused until it is writable again</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="259"/>
        <source>No account yet: add one from this menu.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="266"/>
        <source>%1 — %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="279"/>
        <source>Copied</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="279"/>
        <source>The %1 configuration is on the clipboard.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::UsagePage</name>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="60"/>
        <source>Last 24 hours</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="61"/>
        <source>Last 7 days</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="62"/>
        <source>Last 30 days</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="65"/>
        <source>5 h window</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="66"/>
        <source>Weekly window</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="69"/>
        <source>Range</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="71"/>
        <source>Used % of</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="77"/>
        <source>Tokens per account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="78"/>
        <source>Used % over time (squares mark resets)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="79"/>
        <source>Input tokens: cached vs uncached</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="128"/>
        <source>Loading…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="168"/>
        <source>Read from the rollups in %1 ms, drawn in %2 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="169"/>
        <source>Cannot read the usage: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="181"/>
        <source>(no account)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="209"/>
        <source>Cached</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="210"/>
        <source>Uncached</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="273"/>
        <source>Reset</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>

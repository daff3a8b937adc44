package body

import (
	"net/url"
	"testing"
)

func TestForm(t *testing.T) {
	f, err := ParseForm("email={email}&description={description}&metadata={metadata}&expand[]={expand}&MediaUrl={media}&items={items}&amount={amount}&confirm={confirm}&mode=live&absent={absent}")
	if err != nil {
		t.Fatal(err)
	}
	in := `{"email":"ann+1@example.com","description":"Ann & Co = 100% ok","metadata":{"order id":"6735","tier":{"level":2}},
	  "expand":["customer","invoice.subscription"],"media":["https://x.test/a.png","https://x.test/b.png"],
	  "items":[{"price":"price_1","quantity":2}],"amount":9007199254740993,"confirm":true,"ignored":1}`
	got, err := f.Fill([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "email=ann%2B1%40example.com&description=Ann+%26+Co+%3D+100%25+ok&metadata[order+id]=6735&metadata[tier][level]=2" +
		"&expand[]=customer&expand[]=invoice.subscription&MediaUrl=https%3A%2F%2Fx.test%2Fa.png&MediaUrl=https%3A%2F%2Fx.test%2Fb.png" +
		"&items[0][price]=price_1&items[0][quantity]=2&amount=9007199254740993&confirm=true&mode=live"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// What a server reads back.
	q, err := url.ParseQuery(got)
	if err != nil || q.Get("description") != "Ann & Co = 100% ok" || q.Get("email") != "ann+1@example.com" || len(q["expand[]"]) != 2 || q.Get("metadata[order id]") != "6735" {
		t.Errorf("parsed back: %v %v", q, err)
	}
	mixed, err := ParseForm("To=%2B{to}&Body=Your+code+is+{code}&x=a{missing}")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mixed.Fill([]byte(`{"to":"49 151","code":"12&34"}`)); got != "To=%2B49+151&Body=Your+code+is+12%2634" {
		t.Errorf("mixed: %q", got)
	}
	if _, err := mixed.Fill([]byte(`{"to":["1"],"code":"1"}`)); err == nil {
		t.Error("an array inside a mixed value")
	}
	for _, bad := range []string{"a", "=v", "{a}={a}", "a={}"} {
		if _, err := ParseForm(bad); err == nil {
			t.Errorf("ParseForm(%q) took it", bad)
		}
	}
	if f, _ := ParseForm(""); f == nil {
		t.Error("empty form")
	}
}

func FuzzForm(f *testing.F) {
	f.Add("a={a}&b[]={b}", `{"a":"x y","b":[1,{"c":null}]}`)
	f.Fuzz(func(t *testing.T, tmpl, input string) {
		form, err := ParseForm(tmpl)
		if err != nil {
			return
		}
		out, err := form.Fill([]byte(input))
		if err != nil {
			return
		}
		if _, err := url.ParseQuery(out); err != nil && len(form.Names()) == len(form.pairs) {
			t.Fatalf("%q with %q gave %q, which does not parse: %v", tmpl, input, out, err)
		}
	})
}
